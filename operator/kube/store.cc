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

Store::Entry Store::Encode(ObjectPtr obj) const {
  Entry e;
  e.resource_version = JsonString(*obj, "/metadata/resourceVersion");
  if (options_.compact) {
    auto bytes = std::make_shared<std::string>();
    Json::to_cbor(*obj, *bytes);
    bytes->shrink_to_fit();
    e.cbor = std::move(bytes);
  } else {
    e.tree = std::move(obj);
  }
  return e;
}

ObjectPtr Store::Decode(const Entry& e) {
  if (e.tree != nullptr) return e.tree;
  // Our own encoding of a valid tree: decoding cannot fail short of memory corruption.
  return std::make_shared<const Json>(
      Json::from_cbor(e.cbor->begin(), e.cbor->end(), /*strict=*/true,
                      /*allow_exceptions=*/false));
}

void Store::AddIndexer(const std::string& name, IndexFunc fn) {
  std::lock_guard<std::mutex> l(mu_);
  indexers_[name] = std::move(fn);
  auto& index = indices_[name];
  index.clear();
  for (const auto& [key, entry] : items_) {
    for (std::string& v : indexers_[name](*Decode(entry))) index[v].insert(key);
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

ObjectPtr Store::UpsertLocked(std::string key, ObjectPtr obj) {
  Entry entry = Encode(obj);
  const size_t bytes = entry.cbor != nullptr ? entry.cbor->size() : 0;
  ObjectPtr old;
  auto it = items_.find(key);
  if (it != items_.end()) {
    old = Decode(it->second);
    UnindexLocked(key, *old);
    if (it->second.cbor != nullptr) compact_bytes_ -= it->second.cbor->size();
    it->second = std::move(entry);
  } else {
    it = items_.emplace(key, std::move(entry)).first;
  }
  compact_bytes_ += bytes;
  IndexLocked(it->first, *obj);
  return old;
}

ObjectPtr Store::DeleteLocked(const std::string& key) {
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = Decode(it->second);
  if (it->second.cbor != nullptr) compact_bytes_ -= it->second.cbor->size();
  items_.erase(it);
  UnindexLocked(key, *old);
  return old;
}

ObjectPtr Store::Upsert(ObjectPtr obj) {
  std::string key = ObjectKey(*obj);
  std::lock_guard<std::mutex> l(mu_);
  return UpsertLocked(std::move(key), std::move(obj));
}

Store::Upserted Store::UpsertIfChanged(ObjectPtr obj) {
  std::string key = ObjectKey(*obj);
  const std::string rv = JsonString(*obj, "/metadata/resourceVersion");
  std::lock_guard<std::mutex> l(mu_);
  auto it = items_.find(key);
  if (it != items_.end() && !rv.empty() && it->second.resource_version == rv) return {};
  return {UpsertLocked(std::move(key), std::move(obj)), true};
}

ObjectPtr Store::Delete(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  return DeleteLocked(key);
}

std::vector<ObjectPtr> Store::DeleteExcept(const std::unordered_set<std::string>& keep) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> gone;
  for (const auto& [key, entry] : items_) {
    if (keep.count(key) == 0) gone.push_back(key);
  }
  std::sort(gone.begin(), gone.end());
  std::vector<ObjectPtr> out;
  out.reserve(gone.size());
  for (const std::string& key : gone) out.push_back(DeleteLocked(key));
  return out;
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
  for (const auto& [key, entry] : items_) {
    if (index.count(key) == 0) gone.push_back(key);
  }
  std::sort(gone.begin(), gone.end());
  for (const std::string& key : gone) delta.deleted.push_back(DeleteLocked(key));
  for (auto& [key, obj] : fresh) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      UpsertLocked(key, obj);
      delta.added.push_back(obj);
      continue;
    }
    const std::string new_rv = JsonString(*obj, "/metadata/resourceVersion");
    if (!new_rv.empty() && it->second.resource_version == new_rv) continue;
    ObjectPtr old = UpsertLocked(key, obj);
    delta.updated.emplace_back(std::move(old), obj);
  }
  return delta;
}

ObjectPtr Store::Get(const std::string& key) const {
  Entry e;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    e = it->second;
  }
  return Decode(e);
}

std::string Store::ResourceVersion(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? "" : it->second.resource_version;
}

std::vector<ObjectPtr> Store::List() const {
  std::vector<Entry> entries;
  {
    std::lock_guard<std::mutex> l(mu_);
    entries.reserve(items_.size());
    for (const auto& [key, entry] : items_) entries.push_back(entry);
  }
  std::vector<ObjectPtr> out;
  out.reserve(entries.size());
  for (const Entry& e : entries) out.push_back(Decode(e));
  return out;
}

std::vector<std::string> Store::ListKeys() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, entry] : items_) out.push_back(key);
  return out;
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::vector<Entry> entries;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto idx = indices_.find(index);
    if (idx == indices_.end()) return {};
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return {};
    for (const std::string& key : it->second) {
      auto obj = items_.find(key);
      if (obj != items_.end()) entries.push_back(obj->second);
    }
  }
  std::vector<ObjectPtr> out;
  out.reserve(entries.size());
  for (const Entry& e : entries) out.push_back(Decode(e));
  return out;
}

size_t Store::Size() const {
  std::lock_guard<std::mutex> l(mu_);
  return items_.size();
}

size_t Store::CompactBytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return compact_bytes_;
}

}  // namespace booster::kube
