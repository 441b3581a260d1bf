#include "operator/kube/store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace booster::kube {

std::string ObjectKey(const Json& obj) {
  std::string ns = JsonString(obj, "/metadata/namespace");
  std::string name = JsonString(obj, "/metadata/name");
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

std::vector<std::string> NamespaceIndexFunc(const Json& obj) {
  return {JsonString(obj, "/metadata/namespace")};
}

std::vector<std::string> OwnerIndexFunc(const Json& obj) {
  std::vector<std::string> out;
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return out;
  auto refs = md->find("ownerReferences");
  if (refs == md->end() || !refs->is_array()) return out;
  for (const Json& r : *refs) {
    std::string uid = JsonString(r, "/uid");
    if (!uid.empty()) out.push_back(std::move(uid));
  }
  return out;
}

std::vector<std::string> LabelIndexFunc(const Json& obj) {
  std::vector<std::string> out;
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return out;
  auto labels = md->find("labels");
  if (labels == md->end() || !labels->is_object()) return out;
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    if (it.value().is_string()) {
      out.push_back(absl::StrCat(it.key(), "=", it.value().get_ref<const std::string&>()));
    }
  }
  return out;
}

void Store::AddIndexer(const std::string& name, IndexFunc fn) {
  std::lock_guard<std::mutex> l(mu_);
  indexers_[name] = std::move(fn);
  auto& index = indices_[name];
  index.clear();
  for (const auto& [key, obj] : items_) {
    for (std::string& v : indexers_[name](*obj)) index[v].insert(key);
  }
}

void Store::IndexLocked(const std::string& key, const Json& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (std::string& v : fn(obj)) index[v].insert(key);
  }
}

void Store::UnindexLocked(const std::string& key, const Json& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& index = indices_[name];
    for (const std::string& v : fn(obj)) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.erase(it);
    }
  }
}

ObjectPtr Store::UpsertLocked(ObjectPtr obj) {
  std::string key = ObjectKey(*obj);
  ObjectPtr old;
  auto it = items_.find(key);
  if (it != items_.end()) {
    old = std::move(it->second);
    UnindexLocked(key, *old);
    it->second = obj;
  } else {
    items_.emplace(key, obj);
  }
  IndexLocked(key, *obj);
  return old;
}

ObjectPtr Store::DeleteLocked(const std::string& key) {
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  UnindexLocked(key, *old);
  return old;
}

ObjectPtr Store::Upsert(ObjectPtr obj) {
  std::lock_guard<std::mutex> l(mu_);
  return UpsertLocked(std::move(obj));
}

ObjectPtr Store::Delete(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  return DeleteLocked(key);
}

Store::Delta Store::Replace(std::vector<ObjectPtr> items) {
  Delta delta;
  std::lock_guard<std::mutex> l(mu_);
  // Keep the list's order for the events; a repeated key keeps its last object.
  std::unordered_map<std::string, size_t> index;
  std::vector<std::pair<std::string, ObjectPtr>> fresh;
  fresh.reserve(items.size());
  for (ObjectPtr& obj : items) {
    std::string key = ObjectKey(*obj);
    auto [it, inserted] = index.emplace(key, fresh.size());
    if (inserted) {
      fresh.emplace_back(std::move(key), std::move(obj));
    } else {
      fresh[it->second].second = std::move(obj);
    }
  }
  std::vector<std::string> gone;
  for (const auto& [key, obj] : items_) {
    if (index.count(key) == 0) gone.push_back(key);
  }
  std::sort(gone.begin(), gone.end());
  for (const std::string& key : gone) delta.deleted.push_back(DeleteLocked(key));
  for (auto& [key, obj] : fresh) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      UpsertLocked(obj);
      delta.added.push_back(obj);
      continue;
    }
    const std::string old_rv = JsonString(*it->second, "/metadata/resourceVersion");
    const std::string new_rv = JsonString(*obj, "/metadata/resourceVersion");
    if (!old_rv.empty() && old_rv == new_rv) continue;
    ObjectPtr old = UpsertLocked(obj);
    delta.updated.emplace_back(std::move(old), obj);
  }
  return delta;
}

ObjectPtr Store::Get(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Store::List() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(obj);
  return out;
}

std::vector<std::string> Store::ListKeys() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(key);
  return out;
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  for (const std::string& key : it->second) {
    auto obj = items_.find(key);
    if (obj != items_.end()) out.push_back(obj->second);
  }
  return out;
}

size_t Store::Size() const {
  std::lock_guard<std::mutex> l(mu_);
  return items_.size();
}

}  // namespace booster::kube
