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
// the target N minus that (SplitReplicas; an HPA's minReplicas stays on the target, the
// canary giving way down to one pod); with a fresh baseline (analysis.baseline Fresh, mode
// Metrics) a third Deployment as large as the canary takes its pods from the target's
// share (SplitWithBaseline); actions that lower a count come before those that raise one,
// so executing them in order never requests more than N + 1 pods. N is the app's total: a replica count someone
// else writes on the target (a person, an HPA) becomes the new N, re-split at once.
//
// The target's template is always the team's template plus Booster's layer
// (pod_template.h): every pass derives the team's template from the target as it is now,
// so a new revision by someone else is kept (and restarts the canary on it), and every
// rollback or unenrollment takes the layer off the current template instead of writing
// a saved copy back. Every write of the target's template tests the template it was
// planned on, and every write of its replicas the count it was planned on, so a change
// someone made meanwhile is never overwritten: the write fails and the next pass sees it.
//
// Instances (docs/rollout.md, "One profile, one operator"): with MutationOptions::instance
// set, a profile is claimed for that operator installation (kInstanceAnnotation, written
// with a test of the profile's resourceVersion) before anything else; a profile claimed by
// another instance gets no status write and no action (Plan::claimed_by says by whom).
//
// Dry run (spec.rollout.analysis.dryRun, docs/analysis.md): the verdict source is asked and
// its verdicts are recorded as always, but one that would roll back (a Fail, or an
// Inconclusive that onInconclusive: Rollback ends) is marked Decision::dry_run, its message
// prefixed with kDryRunPrefix, and announced with a Warning Event (DryRunAnalysisFailed,
// DryRunAnalysisInconclusive); the step runs on to its end and then advances as a Pass
// would, with a transition of that reason.
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
#include "operator/rollout/go_facts.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/types.h"
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

// A pod of the profile that cannot run with the tuning: the kubelet refused it for a reason
// the tuning causes and no retry can cure (status.phase Failed, status.reason
// SysctlForbidden: a sysctl the node does not allow), or a container of it was OOM-killed
// (reason OOMKilled). See ObserveRejectedPod.
struct RejectedPod {
  std::string name;
  std::string arm;      // its booster.dev/arm label
  std::string reason;   // status.reason
  std::string message;  // status.message
};

// The RejectedPod a pod is, or nullopt: a Failed pod whose status.reason is one of the
// kubelet's admission refusals a tuning causes (SysctlForbidden), or a pod not being
// deleted with a container whose state or lastState is terminated with reason OOMKilled.
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

// The highest resident set (memoryRss) an agent of each arm reported in the current step,
// and the pod: for the memory guardrail (a canary that nears its memory limit while the
// baseline does not rolls back at once, reason MemoryNearLimit).
struct ArmMemoryPeak {
  std::string pod;
  double rss_bytes = 0;
};
struct MemoryPeaks {
  std::optional<ArmMemoryPeak> baseline;
  std::optional<ArmMemoryPeak> canary;
};
// The share of the memory limit a canary's resident set may reach.
inline constexpr double kMemoryNearLimitShare = 0.9;

struct Observations {
  DeploymentView target;
  DeploymentView canary;
  // Name of a HorizontalPodAutoscaler whose scaleTargetRef is the target, or "".
  std::string hpa_name;
  // Its spec.minReplicas (the API server defaults it to 1); 0 without an HPA.
  int32_t hpa_min_replicas = 0;
  // Its status.desiredReplicas: the count it computed at its last sync; 0 when not known.
  int32_t hpa_desired_replicas = 0;
  // The shared analysis template the spec was merged with (analysis_template.h), recorded
  // as status.analysisTemplate while the spec is valid; nullopt = none named.
  std::optional<AnalysisTemplateStatus> analysis_template;
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
  // The Deployment under the fresh baseline's name (BaselineName), if any.
  DeploymentView baseline;
  // What the agents read of the program (TuningReached reports a GOMAXPROCS that changes
  // nothing, reason NoOp); nullopt = not known.
  std::optional<GoFacts> go;
  // The arms' memory peaks of the current step; nullopt = not known.
  std::optional<MemoryPeaks> memory;
};

enum class ActionType {
  kClaimProfile,         // JSON Patch `body` on the profile: claim it for this instance
  kAddFinalizer,         // add kFinalizer to the profile (merge patch on metadata)
  kRemoveFinalizer,      // remove it (the profile then goes away)
  kEnrollTarget,         // JSON Patch `body` on the target (layer and claim, see Ownership)
  kScaleTarget,          // JSON Patch `body` on the target (replicas + scaled-to)
  kCreateCanary,         // create the Deployment in `body` (fails if the name is taken)
  kPatchCanary,          // JSON Patch `body` on the canary (tests its uid first)
  kPromoteTemplate,      // JSON Patch `body` on the target
  kRestoreTemplate,      // JSON Patch `body` on the target
  kDeleteCanary,         // delete Deployment `name` with precondition uid `uid`
  kCreateBaseline,       // create the fresh baseline Deployment in `body`
  kPatchBaseline,        // JSON Patch `body` on the fresh baseline (tests its uid first)
  kDeleteBaseline,       // delete the fresh baseline `name` with precondition uid `uid`
  kRecordEvent,          // Event on the profile: event_type, reason, message, transition_to
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
  // kRecordEvent of a phase transition: the phase it moved to ("" for other Events).
  std::string transition_to;
  absl::Duration delay = absl::ZeroDuration();
};

// One line for logs: "ScaleTarget checkout replicas=9".
std::string DescribeAction(const Action& action);

struct Plan {
  RolloutStatus status;
  bool status_changed = false;
  // In order: the Events of the pass (kRecordEvent) come last but one, the requeue last.
  std::vector<Action> actions;
  // The operator instance that claimed the profile when it is not this one: the plan is
  // then empty (no status change, no action).
  std::string claimed_by;
};

Plan Reconcile(const Profile& profile, const Observations& obs, VerdictSource& verdicts,
               absl::Time now, const MutationOptions& options = MutationOptions());

// ceil(n * weight / 100), without overflow.
int32_t CanaryReplicas(int32_t n, int weight);

// The target's and the canary's replicas at `weight` of a total of `n`, with at least
// `floor` pods (an HPA's minReplicas, at most n) left on the target: the canary gets
// CanaryReplicas(n, weight) unless that leaves the target short of the floor; then it gets
// what is above the floor, but at least one pod at any weight > 0, so the two never add up
// to more than n + 1.
struct Split {
  int32_t stable = 0;
  int32_t canary = 0;
  bool operator==(const Split&) const = default;
};
Split SplitReplicas(int32_t n, int weight, int32_t floor);

// The split of a step with a fresh baseline (analysis.baseline Fresh): SplitReplicas, then
// a baseline as large as the canary whose pods come from the target's share above `floor`;
// one pod beyond n only when the target has too few to give and the split has not gone
// beyond n already. So the three never add up to more than n + 1, and the baseline is 0
// (the step compares with the target) only when no pod can be had at all: n = 0, or an
// HPA's minimum holds the whole of n and the canary already took the pod beyond it.
struct ArmSplit {
  int32_t stable = 0;
  int32_t canary = 0;
  int32_t baseline = 0;
  bool operator==(const ArmSplit&) const = default;
};
ArmSplit SplitWithBaseline(int32_t n, int weight, int32_t floor);

// Pods the promotion moves from the canary to the target at once: 25% of N, at least 1.
int32_t PromotionBatch(int32_t n);

// The canary Deployment: owned by the profile, the target's selector plus the canary arm
// label, the target's strategy, minReadySeconds and progressDeadlineSeconds.
Json CanaryDeployment(const ProfileMeta& meta, const DeploymentView& target,
                      const Json& pod_template, int32_t replicas);

// The fresh baseline Deployment: as CanaryDeployment, with the baseline arm and
// kFreshBaselineLabel in its selector, named BaselineName(target.name).
Json BaselineDeployment(const ProfileMeta& meta, const DeploymentView& target,
                        const Json& pod_template, int32_t replicas);
// "<target>-booster-baseline".
std::string BaselineName(const std::string& target);

// The template marker the windows of a step's baseline arm must carry (the feedback
// store's BeginStep): the fresh baseline's while the step has one, and until it exists a
// marker no pod carries, so the target's pods never stand in for it; the target's
// otherwise.
std::string StepBaselineMarker(const RolloutStatus& status, const Observations& obs);
inline constexpr char kNoFreshBaselineYet[] = "fresh-baseline-not-created";

// What status.lastDecision.message of a verdict dry run kept from rolling back starts with.
inline constexpr char kDryRunPrefix[] = "dry run: would have rolled back: ";

// The condition types the machine maintains.
inline constexpr char kConditionReady[] = "Ready";
inline constexpr char kConditionProgressing[] = "Progressing";
inline constexpr char kConditionInvalidSpec[] = "InvalidSpec";
inline constexpr char kConditionTargetFound[] = "TargetFound";
inline constexpr char kConditionTargetModified[] = "TargetModified";
inline constexpr char kConditionHpaDetected[] = "HPADetected";
// True while the profile stands back from an object it does not own: its target is held
// by another profile (reason TargetHeld), its canary's name is taken by a Deployment it
// did not create (reason CanaryNameTaken), or its fresh baseline's is (reason
// BaselineNameTaken: the steps then compare the canary with the target's pods).
inline constexpr char kConditionConflict[] = "Conflict";
// True when the node refused to run the tuning (reason SysctlForbidden: the kubelet
// rejected a canary pod for a sysctl it does not allow), a canary container was OOM-killed
// (OOMKilled), or a canary's resident set reached kMemoryNearLimitShare of its memory limit
// while the baseline's stayed below (MemoryNearLimit); the rollout then rolls back at
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
// Event KnobsNotReached when that list changes; False (reason NoOp) when the knobs reached
// the pods but one changes nothing for the program (a GOMAXPROCS its Go version already
// runs with, go_facts.h), Warning Event KnobsNoOp. Unknown (NoReport) when a rollout starts.
// Informational: it does not fail the step; the verdict judges what the canary measures.
inline constexpr char kConditionTuningReached[] = "TuningReached";
// After promotion: whether the target still carries the promoted tuning (Booster's layer).
// False (reason RemovedByOthers) when someone else's change took part of it off (a
// `kubectl replace`, a GitOps self-heal), naming each part; Booster never puts it back
// untested (a retry, or onNewRevision: Reverify on the next revision, sends it out as a
// canary again).
inline constexpr char kConditionLayerIntact[] = "LayerIntact";

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_STATE_MACHINE_H_
