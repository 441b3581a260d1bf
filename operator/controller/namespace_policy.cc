#include "operator/controller/namespace_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace booster::controller {

bool IsControlPlaneNamespace(const std::string& ns) {
  return ns == "kube-system" || ns == "kube-public" || ns == "kube-node-lease";
}

std::string NamespaceRefusal(const NamespacePolicy& policy, const std::string& ns,
                             const kube::Json* ns_object) {
  if (IsControlPlaneNamespace(ns)) {
    return absl::StrCat("namespace ", ns,
                        " belongs to the control plane: Booster never tunes workloads there");
  }
  if (policy.Open()) return "";
  if (std::find(policy.enabled.begin(), policy.enabled.end(), ns) != policy.enabled.end()) {
    return "";
  }
  if (!policy.label.empty() && policy.label_readable && ns_object != nullptr &&
      ns_object->is_object()) {
    auto meta = ns_object->find("metadata");
    if (meta != ns_object->end() && meta->is_object()) {
      auto labels = meta->find("labels");
      if (labels != meta->end() && labels->is_object()) {
        auto v = labels->find(policy.label);
        if (v != labels->end() && v->is_string() && v->get<std::string>() == "true") return "";
      }
    }
  }
  std::vector<std::string> ways;
  if (!policy.label.empty() && policy.label_readable) {
    ways.push_back(absl::StrCat("label it (kubectl label namespace ", ns, " ", policy.label,
                                "=true)"));
  }
  ways.push_back("add it to the operator's --enabled-namespaces (chart value "
                 "operator.enabledNamespaces)");
  return absl::StrCat("namespace ", ns, " has not opted in to Booster: ",
                      absl::StrJoin(ways, ", or "));
}

}  // namespace booster::controller
