// BoosterProfile types, parsed from the JSON object the API server returns, and validated
// with the CRD's rules plus the semantic ones the schema cannot express (the sysctl
// allowlist, durations, knobs that depend on each other). Errors carry the field path and
// what to do about it, because they end up verbatim in the InvalidSpec condition.
//
//   absl::StatusOr<Profile> p = ParseProfile(object_json);
//   if (!p->spec.ok()) SetInvalidSpec(p->spec.status().message());
//   Json status = StatusToJson(p->status);
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace booster::rollout {

// The same JSON type as booster::kube::Json (operator/kube/json.h).
using Json = nlohmann::json;

inline constexpr char kGroup[] = "booster.dev";
inline constexpr char kApiVersion[] = "booster.dev/v1alpha1";
inline constexpr char kKind[] = "BoosterProfile";
inline constexpr char kFinalizer[] = "booster.dev/finalizer";

// Annotations on the profile that drive a rollout by hand (kubectl annotate). The one-shot
// ones act once per distinct value; the value acted on is kept in status.handled.
inline constexpr char kAnnotationPaused[] = "booster.dev/paused";           // "true"
inline constexpr char kAnnotationPromoteNow[] = "booster.dev/promote-now";  // any token
inline constexpr char kAnnotationAbort[] = "booster.dev/abort";             // any token
inline constexpr char kAnnotationRetry[] = "booster.dev/retry";             // any token

enum class CpuPlacement { kNone, kSpread, kWholeCores, kPinned };
enum class NumaPolicy { kNone, kPreferred, kAlign, kBind };
enum class Allocator { kDefault, kJemalloc, kMimalloc, kTcmalloc };
enum class HpaPolicy { kFollow, kPause, kFixed };
// What a new revision of the target (someone else changed its pod template) does.
enum class NewRevisionPolicy {
  kRestart,   // in flight: the canary is rebuilt on it and the analysis restarts at step 1
  kRollback,  // in flight: the rollout rolls back (terminal); the new revision is kept
  kReverify,  // as Restart; and after promotion the tuning goes out as a canary again
};
enum class AnalysisMode { kTime, kMetrics };
enum class InconclusivePolicy { kRollback, kPromote };

struct TargetRef {
  std::string api_version = "apps/v1";
  std::string kind = "Deployment";
  std::string name;
  // Containers that get the runtime library and knobs; empty = all.
  std::vector<std::string> containers;
};

struct GoTuning {
  // Normalised strings as written in the profile; "" = not asked for.
  std::string gomaxprocs;  // "auto" or "1".."1024"
  std::string gomemlimit;  // "auto", "85%", "768MiB"
  std::string gogc;        // "off" or "10".."10000"
};

struct PreloadTuning {
  std::optional<int> listen_backlog;
  std::optional<bool> tcp_no_delay;
  std::optional<bool> tcp_quick_ack;
  std::optional<int> busy_poll_us;
  std::optional<int> receive_buffer_bytes;
  std::optional<int> send_buffer_bytes;
  std::optional<bool> coarse_clocks;
  Allocator allocator = Allocator::kDefault;
};

struct Tuning {
  CpuPlacement placement = CpuPlacement::kNone;
  NumaPolicy numa = NumaPolicy::kNone;
  std::map<std::string, std::string> sysctls;  // values normalised to strings
  GoTuning go;
  PreloadTuning preload;
};

struct MetricSpec {
  std::string name;
  double max_regression_percent = 5;
  std::optional<double> min_improvement_percent;
  bool required = true;
};

struct AnalysisSpec {
  AnalysisMode mode = AnalysisMode::kTime;
  absl::Duration interval = absl::Seconds(30);
  // Windows that start sooner than this after their pod started count in neither arm;
  // unset: one interval.
  std::optional<absl::Duration> warmup;
  int min_samples = 10;
  double confidence = 0.95;
  int max_extensions = 2;
  InconclusivePolicy on_inconclusive = InconclusivePolicy::kRollback;
  std::vector<MetricSpec> metrics;
  // spec.rollout.analysis.source: where the application's request metrics are, validated
  // and with only the keys given ({} = the agent finds port and names). Handed to the
  // agents verbatim as BOOSTER_APP_METRICS (sidecar/sample/app_metrics.h reads it).
  Json source = Json::object();
};

struct RolloutSpec {
  std::vector<int> steps = {10, 50, 100};
  absl::Duration step_duration = absl::Minutes(2);
  absl::Duration progress_deadline = absl::Minutes(10);
  bool paused = false;
  HpaPolicy hpa_policy = HpaPolicy::kFollow;
  NewRevisionPolicy on_new_revision = NewRevisionPolicy::kRestart;
  AnalysisSpec analysis;
};

struct ProfileSpec {
  TargetRef target_ref;
  Tuning tuning;
  RolloutSpec rollout;
};

enum class Phase {
  kPending,
  kEnrolling,
  kProgressing,
  kPaused,
  kPromoting,
  kPromoted,
  kRollingBack,
  kRolledBack,
  kFailed,
};

struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;
  absl::Time last_transition_time = absl::InfinitePast();

  bool operator==(const Condition&) const = default;
};

struct Transition {
  std::string from;
  std::string to;
  std::string reason;
  std::string message;
  absl::Time time = absl::InfinitePast();

  bool operator==(const Transition&) const = default;
};

struct Decision {
  std::string verdict;  // "Pass", "Fail", "Inconclusive"
  int step = 0;
  std::string reason;
  std::string message;
  absl::Time time = absl::InfinitePast();
  std::map<std::string, std::string> evidence;

  bool operator==(const Decision&) const = default;
};

// Values of the one-shot annotations already acted on.
struct HandledControls {
  std::string abort;
  std::string promote_now;
  std::string retry;

  bool operator==(const HandledControls&) const = default;
};

// status.arms: what the agents of each arm reported for the current step (the feedback
// stream's windows, docs/feedback.md): pods that sent at least one window, and windows.
struct ArmReport {
  int pods = 0;
  int64_t windows = 0;
  bool operator==(const ArmReport&) const = default;
};
struct ArmsReport {
  int step = 0;
  ArmReport baseline;
  ArmReport canary;
  bool operator==(const ArmsReport&) const = default;
};

// .status. Unset times are absl::InfinitePast() and are omitted from the JSON.
struct RolloutStatus {
  Phase phase = Phase::kPending;
  int64_t observed_generation = 0;
  int current_step = 0;  // 1-based index into spec.rollout.steps; 0 = no step yet
  int canary_weight = 0;
  int total_replicas = 0;     // N
  int original_replicas = 0;  // target replicas when the rollout started
  int stable_replicas = 0;    // target replicas the operator wants
  int canary_replicas = 0;    // canary replicas the operator wants
  // Replicas the target keeps whatever the weight, beyond an HPA's minReplicas: the count an
  // HPA wrote again after Booster had re-split it (it holds that many on the target itself,
  // at its maxReplicas for one). 0 = none; cleared by any other count written.
  int target_floor = 0;
  std::string canary_name;
  std::string target_uid;
  std::string target_name;  // the Deployment this rollout enrolled (and may hold)
  // Hash of the team's template (the target's without Booster's layer) that both arms
  // run; another value on the target is a new revision by someone else.
  std::string team_template_hash;
  std::string rollout_hash;
  // The tuning the target's baseline arm carries during this rollout (TuningToJson, as
  // text): the one an earlier rollout promoted, which a rollback keeps; "" = none (the
  // target is only enrolled, and a rollback gives it back without Booster's layer).
  std::string baseline_tuning;
  absl::Time phase_start_time = absl::InfinitePast();
  absl::Time step_start_time = absl::InfinitePast();
  absl::Time analysis_start_time = absl::InfinitePast();
  int extensions = 0;
  HandledControls handled;
  std::optional<Transition> last_transition;
  std::optional<Decision> last_decision;
  std::optional<ArmsReport> arms;  // set while a step is analysed
  std::vector<Condition> conditions;

  bool operator==(const RolloutStatus&) const = default;
};

struct ProfileMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  bool deleting = false;  // metadata.deletionTimestamp is set
};

struct Profile {
  ProfileMeta meta;
  // The spec, or kInvalidArgument with a message for the InvalidSpec condition.
  absl::StatusOr<ProfileSpec> spec;
  RolloutStatus status;
};

// Parses a whole BoosterProfile object. Fails only when the object is not a
// BoosterProfile at all (wrong kind, no metadata.name); a bad spec is reported in
// Profile::spec and a malformed status is read leniently (unknown values -> defaults).
absl::StatusOr<Profile> ParseProfile(const Json& object);

// Parses and validates .spec: schema rules and semantic rules. All problems are reported
// at once, separated by "; ", each prefixed by its field path.
absl::StatusOr<ProfileSpec> ParseSpec(const Json& spec);

RolloutStatus ParseStatus(const Json& status);
Json StatusToJson(const RolloutStatus& status);

// Canonical JSON of the tuning (defaults filled in, keys sorted): what the canary runs,
// the agent's BOOSTER_TUNING, and the input of RolloutHash.
Json TuningToJson(const Tuning& tuning);
// The tuning of a spec.tuning object (TuningToJson's output included), validated as
// ParseSpec validates it.
absl::StatusOr<Tuning> TuningFromJson(const Json& tuning);

// A short hash of everything that defines what a rollout carries out (tuning, steps,
// containers). Changing any of them restarts the rollout; pausing or changing durations
// does not.
std::string RolloutHash(const ProfileSpec& spec);

// Go-style durations as the CRD accepts them ("90s", "2m", "1h30m", "1.5s", "250ms").
absl::StatusOr<absl::Duration> ParseGoDuration(absl::string_view text);
// "2m0s" style is not needed: the shortest exact form ("2m", "90s", "1h30m", "250ms").
std::string FormatGoDuration(absl::Duration d);

// RFC 3339 times as the API server writes them.
std::string FormatRfc3339(absl::Time t);
absl::Time ParseTimeOr(absl::string_view text, absl::Time fallback);

absl::string_view PhaseName(Phase phase);
std::optional<Phase> ParsePhase(absl::string_view name);
absl::string_view AllocatorName(Allocator a);
absl::string_view PlacementName(CpuPlacement p);
absl::string_view NumaName(NumaPolicy n);

// The namespaced sysctls the operator will write, with a validator for each value.
// Returns "" when `value` is acceptable for `key`, otherwise why not.
bool IsKnownSysctl(absl::string_view key);
std::string CheckSysctlValue(absl::string_view key, absl::string_view value);
std::vector<std::string> KnownSysctls();

// Conditions, after metav1.Condition: lastTransitionTime moves only when status changes.
void SetCondition(std::vector<Condition>& conditions, absl::string_view type,
                  absl::string_view status, absl::string_view reason, absl::string_view message,
                  int64_t generation, absl::Time now);
const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type);

// FNV-1a 64 over `text`, as 16 hex digits. Change detection only, not security.
std::string Fnv1aHex(absl::string_view text);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_H_
