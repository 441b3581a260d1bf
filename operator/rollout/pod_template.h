// Pod-template mutation: pure JSON -> JSON functions. Booster's changes are a *layer* on
// the team's own template, never a snapshot of it: EnrolledTemplate adds the enrollment
// (agent sidecar in observe mode, shared volume, `booster-agent install` init container,
// dormant runtime library, arm label), TunedTemplate that plus a tuning (Go and
// libbooster.so knobs in the environment, namespaced sysctls), and TeamTemplate takes the
// layer off again — from whatever the template has become since, so a change someone
// else made meanwhile (a new image, a new env value) is kept.
//
//   EnrollContext ctx{"shop", "checkout", {}};
//   absl::StatusOr<Json> baseline = EnrolledTemplate(team, ctx, MutationOptions{});
//   absl::StatusOr<Json> canary = TunedTemplate(team, tuning, kArmCanary, ctx, opts);
//   Json back = TeamTemplate(later_version_of_baseline, opts);   // the team's, as it is now
//
// The layer carries its own record (the template annotation kLayerAnnotation): every value
// of the team's that it replaced (an env entry, a sysctl, shareProcessNamespace), and the
// value it wrote instead. TeamTemplate puts a replaced value back only where the template
// still holds Booster's value; where someone changed it since, theirs stays. Parts that
// are Booster's alone (its containers, volumes, labels and annotations) are removed by
// name. TeamTemplate(EnrolledTemplate(t)) == t and TeamTemplate(TunedTemplate(t)) == t
// byte for byte, so an unedited Deployment gets back exactly its template (same
// pod-template-hash, its old ReplicaSet). Every function strips before it adds, so each is
// idempotent: applied to its own output it returns that output unchanged.
#ifndef BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_
#define BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// Pod-template labels and annotations.
inline constexpr char kArmLabel[] = "booster.dev/arm";
inline constexpr char kArmBaseline[] = "baseline";
inline constexpr char kArmCanary[] = "canary";
inline constexpr char kArmPromoted[] = "promoted";
// On the pods of the fresh baseline Deployment (analysis.baseline Fresh), with the value
// "true"; part of that Deployment's selector, so the target's own pods are never its pods.
inline constexpr char kFreshBaselineLabel[] = "booster.dev/fresh-baseline";
inline constexpr char kProfileAnnotation[] = "booster.dev/profile";  // ns/name
inline constexpr char kTemplateHashAnnotation[] = "booster.dev/template-hash";
inline constexpr char kTuningHashAnnotation[] = "booster.dev/tuning-hash";
// The layer's record: what Booster wrote into the team's own parts of the template and
// what it replaced there (JSON, see TeamTemplate).
inline constexpr char kLayerAnnotation[] = "booster.dev/layer";
// Written by operators before the layer record: enrollment turned shareProcessNamespace on.
// Read (and removed) by TeamTemplate on such templates.
inline constexpr char kSharedPidAnnotation[] = "booster.dev/share-process-namespace";

// Deployment annotations written by the operator on the target.
inline constexpr char kScaledToAnnotation[] = "booster.dev/scaled-to";
// Snapshots of the template written by operators before the layer record; never read, only
// removed when the target is given back.
inline constexpr char kLegacyOriginalTemplateAnnotation[] = "booster.dev/original-template";
inline constexpr char kLegacyBaselineTemplateAnnotation[] = "booster.dev/baseline-template";
// The profile that holds the target (one Deployment, one rollout): its name, and its uid,
// which is what decides.
inline constexpr char kHolderAnnotation[] = "booster.dev/holder";
inline constexpr char kHolderUidAnnotation[] = "booster.dev/holder-uid";
// On the profile: the operator instance that manages it (MutationOptions::instance).
inline constexpr char kInstanceAnnotation[] = "booster.dev/instance";

inline constexpr char kAgentContainer[] = "booster-agent";
inline constexpr char kInstallContainer[] = "booster-install";

struct MutationOptions {
  // The operator installation's name. When set, a profile is claimed for it
  // (kInstanceAnnotation) before anything is done, and one claimed by another instance is
  // left alone (state_machine.h).
  std::string instance;
  std::string agent_image = "booster-agent:dev";
  std::string image_pull_policy = "IfNotPresent";
  // Arguments of the sidecar and of the init container (the image's entrypoint is
  // booster-agent; see sidecar/main.cc for its command line). Both use mount_path.
  std::vector<std::string> agent_args = {"run", "--state-dir=/booster"};
  // The agent's /metrics and /healthz, on a named container port (liveness probe).
  int agent_port = 9901;
  std::string agent_port_name = "booster-agent";
  // The uid/gid the agent and the install container run as (never root).
  int64_t agent_user = 65532;
  std::vector<std::string> install_args = {"install", "/booster"};
  // Where the agents stream their windows (BOOSTER_OPERATOR) and the PEM of the CA they
  // verify that server with (BOOSTER_OPERATOR_CA). Without a CA the agents are given
  // neither and do not stream (docs/feedback.md).
  std::string operator_address = "booster-operator.booster-system.svc:9443";
  std::string operator_ca_pem;
  std::string volume_name = "booster";
  std::string mount_path = "/booster";
  std::string token_volume_name = "booster-token";
  std::string token_mount_path = "/var/run/secrets/booster";
  std::string token_audience = "booster-operator";
  // The agent's and the install container's resources, chosen so that enrollment never
  // changes the pod's QoS class (PodQosClass of the original template): Burstable pods get
  // agent_resources, Guaranteed pods agent_guaranteed_resources (requests = limits, so the
  // app keeps exclusive CPUs under the static CPU manager), BestEffort pods none.
  Json agent_resources = {{"requests", {{"cpu", "10m"}, {"memory", "32Mi"}}},
                          {"limits", {{"memory", "64Mi"}}}};
  Json agent_guaranteed_resources = {{"requests", {{"cpu", "20m"}, {"memory", "64Mi"}}},
                                     {"limits", {{"cpu", "20m"}, {"memory", "64Mi"}}}};

  // The chaos tests' crash point for the agents (tests/e2e/chaos): copied into the agent
  // container as BOOSTER_TEST_CRASH_AT (common/crash_hook.h); "" = none, always in
  // production. The operator takes it from its own BOOSTER_TEST_AGENT_CRASH_AT.
  std::string agent_crash_at;

  std::string LibraryPath() const { return mount_path + "/libbooster.so"; }
  std::string ControlPath() const { return mount_path + "/control"; }
};

struct EnrollContext {
  std::string profile_namespace;
  std::string profile_name;
  // Containers that get the runtime library and knobs; empty = every app container.
  std::vector<std::string> containers;
  // The agents' window (BOOSTER_WINDOW, from spec.rollout.analysis.interval) and where the
  // application's metrics are (BOOSTER_APP_METRICS, analysis.source as JSON); "" = the
  // agent's default.
  std::string window;
  std::string app_metrics;
};

// The context of profile `ns`/`name` with `spec`: its containers, analysis.interval as the
// window and analysis.source as the app-metrics JSON. The one rule the operator uses.
EnrollContext EnrollContextFor(const std::string& ns, const std::string& name,
                               const ProfileSpec& spec);

// The enrolled (baseline) template: the team's template (TeamTemplate(tmpl): a template
// that already carries a layer has it taken off first) with everything dormant,
// arm=baseline. Fails with kInvalidArgument when the template has no containers, names a
// container in ctx.containers that it does not have, or already has a container, init
// container or volume under one of the names Booster's parts use.
absl::StatusOr<Json> EnrolledTemplate(const Json& tmpl, const EnrollContext& ctx,
                                      const MutationOptions& opts);

// The tuned template for `arm` (kArmCanary or kArmPromoted): the enrolled one plus the
// tuning. GOMAXPROCS/GOMEMLIMIT "auto" derive from each container's own limits and are
// left unset for a container without the limit.
absl::StatusOr<Json> TunedTemplate(const Json& tmpl, const Tuning& tuning,
                                   absl::string_view arm, const EnrollContext& ctx,
                                   const MutationOptions& opts);

// The team's template: `tmpl` without Booster's layer. Every value the layer replaced is
// put back where the template still holds the value the layer wrote; a value someone
// changed since (or an entry someone removed) is left as it is now. Parts that are
// Booster's alone are removed by name. A template without a layer is returned unchanged.
// For the exact inverse (byte for byte) the team's template must have had no empty
// env/volumeMounts/volumes/sysctls lists or label/annotation maps, which the API server
// never returns. A template written before the layer record (no kLayerAnnotation) loses
// Booster's parts by name, and the knobs its agent's BOOSTER_TUNING names.
Json TeamTemplate(const Json& tmpl, const MutationOptions& opts);

// The fresh baseline's template (analysis.baseline Fresh): `baseline` (the target's
// template during the rollout, BaselineTemplate) as arm baseline (label and the agent's
// BOOSTER_ARM, also over a promoted tuning's arm) with kFreshBaselineLabel, a preferred pod
// affinity (weight 100, per node) to pods with every label of `canary` (the canary
// template) and a preferred anti-affinity (weight 50, which the scheduler counts from both
// pods: 100) to its own pods, so the scheduler puts the two arms side by side in pairs where
// it can (each baseline pod on the node with the most canary pods not yet matched), and
// sealed again: its marker differs from the target's, so the feedback store files the windows of
// the fresh pods, and only theirs, as the step's baseline arm.
Json FreshBaselineTemplate(const Json& baseline, const Json& canary);

// What of the layer of `want` (an EnrolledTemplate or TunedTemplate) `tmpl` does not carry,
// one phrase each ("env GOMAXPROCS of container web is 8, not 2", "container booster-agent
// is missing"); empty when every part is there with the value `want` gives it. Parts are
// compared by presence (Booster's containers and volumes, which the API server fills with
// defaults), by value (env entries, sysctls, shareProcessNamespace) and by the arm label and
// tuning hash, so a team's edit elsewhere in the template is not a difference.
std::vector<std::string> LayerDifferences(const Json& tmpl, const Json& want,
                                          const MutationOptions& opts);

// Whether the agent container of `tmpl` measures with other settings than the one of `want`
// (its window BOOSTER_WINDOW and the app's metrics source BOOSTER_APP_METRICS, from
// analysis.interval and .source). LayerDifferences leaves Booster's own containers' insides
// alone (after promotion they are not the tuning); during the steps both arms must measure
// alike, so the state machine re-templates the target when these differ.
bool AgentSettingsDiffer(const Json& tmpl, const Json& want);

// The tuning a tuned template carries (its agent's BOOSTER_TUNING, canonical JSON as
// TuningToJson writes it), or nullopt for an enrolled or unenrolled template.
std::optional<Json> TemplateTuning(const Json& tmpl);

// True when the template carries the Booster marker and the agent sidecar.
bool IsEnrolled(const Json& tmpl);
// True when the template carries any part of a layer (marker, record, Booster's
// containers): TeamTemplate would change it.
bool HasLayer(const Json& tmpl);
// The value of booster.dev/arm, or "".
std::string TemplateArm(const Json& tmpl);
// The booster.dev/template-hash annotation: identifies the template the operator wrote,
// and survives the API server's defaulting.
std::string TemplateMarker(const Json& tmpl);
// Hash of the template as it is (defaults included): detects edits by someone else.
std::string TemplateHash(const Json& tmpl);

// A pod's QoS class, by the kubelet's rules: BestEffort when no container (init
// containers included) sets a CPU or memory request or limit; Guaranteed when every
// container has CPU and memory limits and its requests (defaulted to the limits) equal
// them; Burstable otherwise. Booster's own containers are left out, so the class is the
// application's.
enum class QosClass { kBestEffort, kBurstable, kGuaranteed };
absl::string_view QosClassName(QosClass qos);  // as in a pod's status.qosClass
QosClass PodQosClass(const Json& tmpl);

// Kubernetes quantities, for GOMAXPROCS/GOMEMLIMIT "auto": CPU in millicores
// ("500m" -> 500, "2" -> 2000, "1.5" -> 1500) and memory in bytes ("512Mi", "1G", "1e9").
std::optional<int64_t> ParseCpuMillis(absl::string_view quantity);
std::optional<int64_t> ParseBytes(absl::string_view quantity);

// The memory limits of the app containers of pod template `tmpl` (those named in
// `containers`, or every container but Booster's own when empty), summed; nullopt when one
// of them has none (the pod may use the node's memory) or there is none.
std::optional<int64_t> MemoryLimitBytes(const Json& tmpl, const std::vector<std::string>& containers);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_
