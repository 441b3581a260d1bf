#include "operator/feedback/pod_lookup.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "operator/kube/helpers.h"

namespace booster::feedback {
namespace {

void ReadStringMap(const kube::Json& pod, const char* pointer,
                   std::map<std::string, std::string>* out) {
  const kube::Json::json_pointer p(pointer);
  if (!pod.contains(p) || !pod.at(p).is_object()) return;
  for (const auto& [k, v] : pod.at(p).items()) {
    if (v.is_string()) (*out)[k] = v.get<std::string>();
  }
}

}  // namespace

PodInfo PodFromJson(const kube::Json& pod) {
  PodInfo info;
  info.pod_namespace = kube::JsonString(pod, "/metadata/namespace");
  info.name = kube::JsonString(pod, "/metadata/name");
  info.uid = kube::JsonString(pod, "/metadata/uid");
  info.phase = kube::JsonString(pod, "/status/phase");
  info.node = kube::JsonString(pod, "/spec/nodeName");
  ReadStringMap(pod, "/metadata/labels", &info.labels);
  ReadStringMap(pod, "/metadata/annotations", &info.annotations);
  const kube::Json::json_pointer owners("/metadata/ownerReferences");
  if (pod.contains(owners) && pod.at(owners).is_array()) {
    for (const kube::Json& o : pod.at(owners)) {
      if (!o.is_object()) continue;
      OwnerRef ref;
      ref.kind = kube::JsonString(o, "/kind");
      ref.name = kube::JsonString(o, "/name");
      ref.uid = kube::JsonString(o, "/uid");
      const kube::Json::json_pointer c("/controller");
      ref.controller = o.contains(c) && o.at(c).is_boolean() && o.at(c).get<bool>();
      info.owners.push_back(std::move(ref));
    }
  }
  absl::Time created;
  if (kube::ParseRfc3339(kube::JsonString(pod, "/metadata/creationTimestamp"), &created)) {
    info.created = created;
  }
  return info;
}

std::optional<PodInfo> StorePodLookup::Find(absl::string_view pod_namespace,
                                            absl::string_view name) const {
  kube::ObjectPtr pod = store_->Get(absl::StrCat(pod_namespace, "/", name));
  if (pod == nullptr) return std::nullopt;
  return PodFromJson(*pod);
}

}  // namespace booster::feedback
