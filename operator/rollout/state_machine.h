// The rollout state machine: (profile, observations of the target and canary Deployments,
// a verdict source, the time) -> (next status, actions). Pure: no I/O, no clock of its own.
//
// It is level-based. Each call first decides the phase (at most one transition), then
// derives from the *new* status the actions that make the cluster match it. The
// reconciler writes the status first and carries out the actions only once that write
// succeeded, so an operator killed at any point recomputes the same actions from the
// persisted status on its next reconcile: actions are idempotent and re-emitted until
// the observations show them done.
//
//   Observations obs{ObserveDeployment(target_json), ObserveDeployment(canary_json)};
//   Plan plan = Reconcile(profile, obs, verdicts, clock.Now(), options);
//   if (plan.status_changed) UpdateStatus(StatusToJson(plan.status));   // 409 -> requeue
//   for (const Action& a : plan.actions) Execute(a);                   // in order
//
// Replica arithmetic (docs/rollout.md): at weight w the canary has ceil(N*w/100) pods and
// the target N minus that; actions that lower a count come before those that raise one,
// so executing them in order never has more than N pods requested in total.
//
// Ownership (docs/rollout.md, "Ownership"): the machine writes only what it owns. A
// target is held by one profile at a time, recorded on the Deployment itself
// (kHolderUidAnnotation, claimed by the enrollment patch with a resourceVersion test, so
// every operator replica and every restart agrees on the holder); a canary is this
// profile's only if it carries an owner reference to the profile's uid. Every write of
// either is guarded by a test of the object's uid, so an object replaced between the
// observation and the write is never touched.
#ifndef BOOSTER_OPERATOR_ROLLOUT_STATE_MACHINE_H_
#define BOOSTER_OPERATOR_ROLLOUT_STATE_MACHINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile.h"
#include "operator/rollout/verdict.h"

namespace booster::rollout {

// What the machine needs to know about a Deployment (target or canary).
struct OwnerRef {
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

struct DeploymentView {
  bool exists = false;
  bool deleting = false;  // metadata.deletionTimestamp is set
  std::string name;
  std::string uid;
  std::string resource_version;
  std::vector<OwnerRef> owners;  // metadata.ownerReferences
  int64_t generation = 0;
  int64_t observed_generation = 0;
  int32_t spec_replicas = 0;
  int32_t replicas = 0;  // status.replicas: pods of every revision
  int32_t updated_replicas = 0;
  int32_t ready_replicas = 0;
  int32_t available_replicas = 0;
  Json pod_template = Json::object();  // spec.template
  std::map<std::string, std::string> annotations;
  Json object = Json::object();  // the whole Deployment as read
};

// Reads a Deployment as the API server returns it; a null or non-object value is a
// Deployment that does not exist.
DeploymentView ObserveDeployment(const Json& deployment);

// A pod of the profile that the kubelet refused to run for a reason the tuning causes and
// no retry can cure (status.phase Failed, status.reason SysctlForbidden: a sysctl the node
// does not allow). See ObserveRejectedPod.
struct RejectedPod {
  std::string name;
  std::string arm;      // its booster.dev/arm label
  std::string reason;   // status.reason
  std::string message;  // status.message
};

// The RejectedPod a pod is, or nullopt: only a Failed pod whose status.reason is one of
// the kubelet's admission refusals a tuning causes (SysctlForbidden).
std::optional<RejectedPod> ObserveRejectedPod(const Json& pod);

// What the canary's agents said in their Applied messages about the knobs of the tuning
// (condition TuningReached): how many canary pods reported, and the knobs that did not
// take effect in some of them.
struct UnreachedKnob {
  std::string knob;     // the agent's setting key: "placement", "runtime.listen_backlog", ...
  std::string outcome;  // "NotReachable" (cannot act on this program) or "Failed"
  std::string reason;   // the agent's words
  int pods = 0;         // of ReachReport::pods
};
struct ReachReport {
  int pods = 0;
  std::vector<UnreachedKnob> not_reached;
};

struct Observations {
  DeploymentView target;
  DeploymentView canary;
  // Name of a HorizontalPodAutoscaler whose scaleTargetRef is the target, or "".
  std::string hpa_name;
  // The Deployment status.targetName names when spec.targetRef now names another one:
  // the profile lets go of it before it starts on the new target.
  DeploymentView previous_target;
  // What the agents reported for the profile's current step, when the operator has a
  // window store (status.arms); nullopt = not known.
  std::optional<ArmsReport> arms;
  // Pods of this profile the kubelet refused (ObserveRejectedPod), in any order.
  std::vector<RejectedPod> rejected_pods;
  // What the canary's agents applied, when the operator receives their stream; nullopt
  // or pods == 0 = nothing known (the condition is then left as it is).
  std::optional<ReachReport> reach;
  // Why the operator may not tune this profile's namespace ("" = it may): the namespace
  // has not opted in, or is the control plane's (controller::NamespaceRefusal).
  std::string namespace_refusal;
};

enum class ActionType {
  kAddFinalizer,         // add kFinalizer to the profile (merge patch on metadata)
  kRemoveFinalizer,      // remove it (the profile then goes away)
  kEnrollTarget,         // JSON Patch `body` on the target (claims it, see Ownership)
  kScaleTarget,          // JSON Patch `body` on the target (replicas + scaled-to)
  kCreateCanary,         // create the Deployment in `body` (fails if the name is taken)
  kPatchCanary,          // JSON Patch `body` on the canary (tests its uid first)
  kPromoteTemplate,      // JSON Patch `body` on the target
  kRestoreTemplate,      // JSON Patch `body` on the target
  kDeleteCanary,         // delete Deployment `name` with precondition uid `uid`
  kRecordEvent,          // Event on the profile: event_type, reason, message
  kRequeueAfter,         // reconcile again after `delay` (at most one, always last)
};

absl::string_view ActionTypeName(ActionType type);

struct Action {
  ActionType type = ActionType::kRequeueAfter;
  std::string name;        // the Deployment the action is about
  std::string uid;         // its uid, a precondition of kDeleteCanary
  int32_t replicas = -1;   // replicas the action sets, -1 = unchanged
  Json body;               // JSON Patch (RFC 6902) for the target, or the canary manifest
  std::string event_type;  // "Normal" / "Warning"
  std::string reason;
  std::string message;
  absl::Duration delay = absl::ZeroDuration();
};

// One line for logs: "ScaleTarget checkout replicas=9".
std::string DescribeAction(const Action& action);

struct Plan {
  RolloutStatus status;
  bool status_changed = false;
  std::vector<Action> actions;
};

Plan Reconcile(const Profile& profile, const Observations& obs, VerdictSource& verdicts,
               absl::Time now, const MutationOptions& options = MutationOptions());

// ceil(n * weight / 100), without overflow.
int32_t CanaryReplicas(int32_t n, int weight);

// Pods the promotion moves from the canary to the target at once: 25% of N, at least 1.
int32_t PromotionBatch(int32_t n);

// The canary Deployment: owned by the profile, the target's selector plus the canary arm
// label, the target's strategy, minReadySeconds and progressDeadlineSeconds.
Json CanaryDeployment(const ProfileMeta& meta, const DeploymentView& target,
                      const Json& pod_template, int32_t replicas);

// The condition types the machine maintains.
inline constexpr char kConditionReady[] = "Ready";
inline constexpr char kConditionProgressing[] = "Progressing";
inline constexpr char kConditionInvalidSpec[] = "InvalidSpec";
inline constexpr char kConditionTargetFound[] = "TargetFound";
inline constexpr char kConditionTargetModified[] = "TargetModified";
inline constexpr char kConditionHpaDetected[] = "HPADetected";
// True while the profile stands back from an object it does not own: its target is held
// by another profile (reason TargetHeld) or its canary's name is taken by a Deployment it
// did not create (reason CanaryNameTaken).
inline constexpr char kConditionConflict[] = "Conflict";
// True when the node refused to run the tuning (reason SysctlForbidden: the kubelet
// rejected a canary pod for a sysctl it does not allow); the rollout then rolls back at
// once. False (reason Admitted) when a new rollout starts.
inline constexpr char kConditionTuningRejected[] = "TuningRejected";
// Whether the profile's namespace has opted in to Booster (a label or the operator's list;
// never the control plane's namespaces). False (reason NotOptedIn): nothing is touched; a
// rollout in flight holds, one that had not started fails with reason
// NamespaceNotEnabled and starts by itself once the namespace opts in.
inline constexpr char kConditionNamespaceEnabled[] = "NamespaceEnabled";
// Whether every knob of the tuning took effect in the canary pods whose agents reported:
// True (reason Reached); False (reason NotReached) naming each knob that could not act
// (for example placement on a program libbooster.so cannot reach) and why, with a Warning
// Event KnobsNotReached when that list changes. Unknown (NoReport) when a rollout starts.
// Informational: it does not fail the step; the verdict judges what the canary measures.
inline constexpr char kConditionTuningReached[] = "TuningReached";

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_STATE_MACHINE_H_
