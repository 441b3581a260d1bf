// Small object helpers every controller needs: owner references, finalizers, status
// conditions (lastTransitionTime moves only when the status changes) and
// observedGeneration. Pure functions on Json objects.
//
//   SetControllerReference(profile, &canary_deployment);
//   if (AddFinalizer(&obj, "booster.dev/cleanup")) client.Update(...);
//   SetCondition(&obj, {"Ready", "True", "RolledOut", "all steps passed"}, clock.Now());
#ifndef BOOSTER_OPERATOR_KUBE_HELPERS_H_
#define BOOSTER_OPERATOR_KUBE_HELPERS_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "operator/kube/json.h"

namespace booster::kube {

// --- owner references ---
// Makes `owner` the controller of `obj` (controller=true, blockOwnerDeletion=true).
// Fails with kAlreadyExists if another object already controls `obj`, and with
// kInvalidArgument if the owner lacks apiVersion/kind/name/uid.
absl::Status SetControllerReference(const Json& owner, Json* obj);
// Adds a non-controller owner reference (idempotent by uid).
absl::Status AddOwnerReference(const Json& owner, Json* obj);
bool IsOwnedBy(const Json& obj, absl::string_view owner_uid);
// The uid of the controlling owner, or "".
std::string ControllerUid(const Json& obj);

// --- finalizers --- (return true when they changed the object)
bool HasFinalizer(const Json& obj, absl::string_view finalizer);
bool AddFinalizer(Json* obj, absl::string_view finalizer);
bool RemoveFinalizer(Json* obj, absl::string_view finalizer);
bool IsBeingDeleted(const Json& obj);  // metadata.deletionTimestamp set

// --- conditions (status.conditions, metav1.Condition) ---
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
};
// Sets or updates the condition of that type; lastTransitionTime changes only when the
// status does. observedGeneration is set from metadata.generation. Returns true if
// anything changed.
bool SetCondition(Json* obj, const Condition& c, absl::Time now);
std::optional<Condition> FindCondition(const Json& obj, absl::string_view type);
bool IsConditionTrue(const Json& obj, absl::string_view type);

// --- generations ---
int64_t Generation(const Json& obj);
int64_t ObservedGeneration(const Json& obj);
void SetObservedGeneration(Json* obj);  // status.observedGeneration = metadata.generation

// RFC 3339 timestamps as the API server writes them.
std::string Rfc3339(absl::Time t);         // "2026-11-29T19:16:31Z"
std::string Rfc3339Micro(absl::Time t);    // "2026-11-29T19:16:31.123456Z"
bool ParseRfc3339(absl::string_view s, absl::Time* t);

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_HELPERS_H_
