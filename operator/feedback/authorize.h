// Authorization of an agent stream: (TokenReview result, live pods) -> accept with the
// agent's identity, or reject with a reason. Pure: no I/O, no clock; the TokenReview is
// made by token_review.h and the pods come from the operator's informer (pod_lookup.h).
//
// The checks, in order; the first that fails decides (docs/feedback.md has the table,
// AuthorizeTest enumerates it):
//
//   authenticated is false                                   -> unauthenticated
//   `audience` not among the review's audiences              -> wrong_audience
//   username not system:serviceaccount:<ns>:<sa>             -> not_service_account
//   extra pod-name / pod-uid not exactly one non-empty value -> not_pod_bound
//   no pod <ns>/<pod-name>, or it has terminated             -> pod_not_found
//   the pod's uid differs from the token's pod-uid           -> pod_uid_mismatch
//   no controlling ReplicaSet, label booster.dev/arm not
//   baseline|canary, or annotation booster.dev/profile not
//   "<ns>/<name>" in the pod's own namespace                 -> not_enrolled
//
// On acceptance every field of the identity comes from the token and the pod object (the
// node from its spec.nodeName).
//
//   AuthDecision d = Authorize(*review, pods);
//   if (!d.accepted()) return Refuse(d.reason, d.detail);
//   Serve(*d.identity);
#ifndef BOOSTER_OPERATOR_FEEDBACK_AUTHORIZE_H_
#define BOOSTER_OPERATOR_FEEDBACK_AUTHORIZE_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/feedback/types.h"

namespace booster::feedback {

// The keys under which the API server puts the pod a bound token belongs to.
inline constexpr char kExtraPodName[] = "authentication.kubernetes.io/pod-name";
inline constexpr char kExtraPodUid[] = "authentication.kubernetes.io/pod-uid";

// Pod metadata read by the checks: the values operator/rollout/pod_template.h writes
// (repeated here so that feedback does not depend on the rollout library).
inline constexpr char kArmLabel[] = "booster.dev/arm";
inline constexpr char kProfileAnnotation[] = "booster.dev/profile";
inline constexpr char kTemplateHashAnnotation[] = "booster.dev/template-hash";

// The status of a TokenReview (authentication.k8s.io/v1) as the API server returned it.
struct TokenReviewResult {
  bool authenticated = false;
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  std::vector<std::string> audiences;
  std::string error;  // the API server's explanation when not authenticated
};

struct OwnerRef {
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

// What the checks need to know about a pod, and what the identity takes from it.
struct PodInfo {
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::string phase;  // status.phase: "Pending", "Running", "Succeeded", "Failed", ""
  std::string node;   // spec.nodeName: "" until the pod is scheduled
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerRef> owners;
  absl::Time created = absl::InfinitePast();
};

// Finds live pods (the operator's informer cache). Implementations are thread-safe.
class PodLookup {
 public:
  virtual ~PodLookup() = default;
  virtual std::optional<PodInfo> Find(absl::string_view pod_namespace,
                                      absl::string_view name) const = 0;
};

enum class RejectReason {
  kMissingToken,            // no `authorization: Bearer <token>` metadata (server)
  kTokenReviewUnavailable,  // the TokenReview could not be made: fail closed (server)
  kUnauthenticated,
  kWrongAudience,
  kNotServiceAccount,
  kNotPodBound,
  kPodNotFound,
  kPodUidMismatch,
  kNotEnrolled,
};
inline constexpr std::array<RejectReason, 9> kRejectReasons = {
    RejectReason::kMissingToken,      RejectReason::kTokenReviewUnavailable,
    RejectReason::kUnauthenticated,   RejectReason::kWrongAudience,
    RejectReason::kNotServiceAccount, RejectReason::kNotPodBound,
    RejectReason::kPodNotFound,       RejectReason::kPodUidMismatch,
    RejectReason::kNotEnrolled};

// The snake_case token used in metrics labels and status messages: "not_enrolled".
absl::string_view RejectReasonName(RejectReason reason);

struct AuthDecision {
  std::optional<AgentIdentity> identity;                 // set iff accepted
  RejectReason reason = RejectReason::kUnauthenticated;  // meaningful iff rejected
  std::string detail;  // for the agent's log and ours; never contains the token

  bool accepted() const { return identity.has_value(); }
  static AuthDecision Accept(AgentIdentity identity);
  static AuthDecision Reject(RejectReason reason, std::string detail);
};

// The decision for a stream whose token the API server reviewed as `review`.
AuthDecision Authorize(const TokenReviewResult& review, const PodLookup& pods,
                       absl::string_view audience = kAudience);

// {namespace, name} of "system:serviceaccount:<namespace>:<name>", nullopt otherwise.
std::optional<std::pair<std::string, std::string>> ParseServiceAccountUsername(
    absl::string_view username);

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_AUTHORIZE_H_
