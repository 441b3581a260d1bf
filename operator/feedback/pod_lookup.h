// PodLookup over the operator's pod informer: reads the fields the authorization checks
// and the agent's identity need from a pod object, and finds pods in a kube::Store keyed
// "namespace/name".
//
//   kube::Informer pods(...);                      // the operator's pod informer
//   StorePodLookup lookup(&pods.store());
//   AuthDecision d = Authorize(review, lookup);
#ifndef BOOSTER_OPERATOR_FEEDBACK_POD_LOOKUP_H_
#define BOOSTER_OPERATOR_FEEDBACK_POD_LOOKUP_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "operator/feedback/authorize.h"
#include "operator/kube/json.h"
#include "operator/kube/store.h"

namespace booster::feedback {

// The PodInfo of a pod object as the API server returns it. Missing fields stay empty.
PodInfo PodFromJson(const kube::Json& pod);

// Finds pods in `store`, which must outlive the lookup. Thread-safe (the store is).
class StorePodLookup final : public PodLookup {
 public:
  explicit StorePodLookup(const kube::Store* store) : store_(store) {}
  std::optional<PodInfo> Find(absl::string_view pod_namespace,
                              absl::string_view name) const override;

 private:
  const kube::Store* const store_;
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_POD_LOOKUP_H_
