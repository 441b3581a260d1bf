// Which namespaces the operator may tune. Whoever can create a BoosterProfile in a
// namespace can change its Deployments and inject the agent and a preloaded library into
// their pods (docs/operator.md, "Trust model"), so namespaces opt in: by a label
// (--namespace-label, value "true") or by name (--enabled-namespaces). Without either, every
// namespace may. The control-plane namespaces (kube-system, kube-public, kube-node-lease)
// never do. A profile in a namespace that may not is held with the condition
// NamespaceEnabled False and nothing is touched (rollout::Observations::namespace_refusal).
//
//   NamespacePolicy p{.enabled = {"shop"}, .label = "booster.dev/enabled"};
//   NamespaceRefusal(p, "kube-system", nullptr);  // "namespace kube-system is part of ..."
#ifndef BOOSTER_OPERATOR_CONTROLLER_NAMESPACE_POLICY_H_
#define BOOSTER_OPERATOR_CONTROLLER_NAMESPACE_POLICY_H_

#include <string>
#include <vector>

#include "operator/kube/json.h"

namespace booster::controller {

struct NamespacePolicy {
  std::vector<std::string> enabled;  // namespaces enabled by name
  std::string label;                 // a namespace with <label>=true is enabled; "" = none
  // The label cannot be read (the operator watches one namespace and may not read
  // Namespace objects): the label rule is not applied.
  bool label_readable = true;
  bool Open() const { return enabled.empty() && label.empty(); }
};

// The control-plane namespaces no profile may tune.
bool IsControlPlaneNamespace(const std::string& ns);

// "" when the operator may act on profiles of `ns`, else why not, in words that say how
// to opt in. `ns_object` is the Namespace as the operator's informer holds it, or null
// when it does not (not labelled, or not read).
std::string NamespaceRefusal(const NamespacePolicy& policy, const std::string& ns,
                             const kube::Json* ns_object);

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_NAMESPACE_POLICY_H_
