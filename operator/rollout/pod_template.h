// Pod-template mutation: pure JSON -> JSON functions that enroll a Deployment's pod
// template (agent sidecar in observe mode, shared volume, `booster-agent install` init
// container, dormant runtime library, arm label) and derive the tuned variant of it (Go
// and libbooster.so knobs in the environment, namespaced sysctls). Every function is
// idempotent: applied to its own output it returns that output unchanged, because each
// container, volume, env entry and sysctl is upserted by name.
//
//   EnrollContext ctx{"shop", "checkout", {}};
//   absl::StatusOr<Json> baseline = EnrolledTemplate(original, ctx, MutationOptions{});
//   absl::StatusOr<Json> canary = TunedTemplate(original, tuning, kArmCanary, ctx, opts);
//
// The original template is kept verbatim in an annotation of the Deployment
// (kOriginalTemplateAnnotation) and written back as is to unenroll; StripEnrollment is
// only the fallback for a template whose annotation was lost or is stale.
#ifndef BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_
#define BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "operator/rollout/profile.h"

namespace booster::rollout {

// Pod-template labels and annotations.
inline constexpr char kArmLabel[] = "booster.dev/arm";
inline constexpr char kArmBaseline[] = "baseline";
inline constexpr char kArmCanary[] = "canary";
inline constexpr char kArmPromoted[] = "promoted";
inline constexpr char kProfileAnnotation[] = "booster.dev/profile";  // ns/name
inline constexpr char kTemplateHashAnnotation[] = "booster.dev/template-hash";
inline constexpr char kTuningHashAnnotation[] = "booster.dev/tuning-hash";
// Set when enrollment turned shareProcessNamespace on (so unenrollment turns it off).
inline constexpr char kSharedPidAnnotation[] = "booster.dev/share-process-namespace";

// Deployment annotations written by the operator on the target.
inline constexpr char kOriginalTemplateAnnotation[] = "booster.dev/original-template";
inline constexpr char kBaselineTemplateAnnotation[] = "booster.dev/baseline-template";
inline constexpr char kScaledToAnnotation[] = "booster.dev/scaled-to";
// The profile that holds the target (one Deployment, one rollout): its name, and its uid,
// which is what decides.
inline constexpr char kHolderAnnotation[] = "booster.dev/holder";
inline constexpr char kHolderUidAnnotation[] = "booster.dev/holder-uid";

inline constexpr char kAgentContainer[] = "booster-agent";
inline constexpr char kInstallContainer[] = "booster-install";

struct MutationOptions {
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

// The enrolled (baseline) template: everything dormant, arm=baseline. Fails with
// kInvalidArgument when the template has no containers or names a container in
// ctx.containers that it does not have.
absl::StatusOr<Json> EnrolledTemplate(const Json& original, const EnrollContext& ctx,
                                      const MutationOptions& opts);

// The tuned template for `arm` (kArmCanary or kArmPromoted): the enrolled one plus the
// tuning. GOMAXPROCS/GOMEMLIMIT "auto" derive from each container's own limits and are
// left unset for a container without the limit.
absl::StatusOr<Json> TunedTemplate(const Json& original, const Tuning& tuning,
                                   absl::string_view arm, const EnrollContext& ctx,
                                   const MutationOptions& opts);

// Removes what EnrolledTemplate added. StripEnrollment(EnrolledTemplate(x)) == x for any
// template x that had no Booster parts and no empty env/volumeMounts/volumes lists or
// empty label/annotation maps. Tuning env of a tuned template is not removed.
Json StripEnrollment(const Json& tmpl, const MutationOptions& opts);

// True when the template carries the Booster marker and the agent sidecar.
bool IsEnrolled(const Json& tmpl);
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

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_POD_TEMPLATE_H_
