// The plain types of a BoosterProfile: enums and structs of its spec, status and metadata,
// as the parser (spec.h) and the status codec (status_codec.h) fill them. No functions
// here, so that anything may include it; it includes only the standard library, Abseil
// (status, time), nlohmann::json and the header-only metric table (metric_names.h).
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_TYPES_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/rollout/profile/metric_names.h"

namespace booster::rollout {

// The same JSON type as booster::kube::Json (operator/kube/json.h).
using Json = nlohmann::json;

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
// What the canary is compared with in mode Metrics (docs/analysis.md, "Fair arms").
enum class BaselinePolicy {
  kFresh,   // a fresh Deployment of the untuned template beside the canary, same size and age
  kTarget,  // the target's own pods (older, and as many as the step leaves it)
};

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
  // A Prometheus metric (docs/prometheus-metrics.md): the PromQL query, with Booster's
  // placeholders (operator/prometheus/query.h), evaluated for each arm once per interval;
  // "" for one of the agent's metrics (metric_names.h).
  std::string prometheus_query;
  // Which way is better: set for a Prometheus metric (the profile says), nullopt for an
  // agent's metric, whose direction is the table's.
  std::optional<Direction> direction;
};

// The direction the judge reads `metric` in: its own, else the agent table's.
inline Direction DirectionOf(const MetricSpec& metric) {
  return metric.direction.value_or(MetricDirection(metric.name));
}

struct AnalysisSpec {
  AnalysisMode mode = AnalysisMode::kMetrics;  // the CRD's default too
  absl::Duration interval = absl::Seconds(30);
  // Windows that start sooner than this after their pod started count in neither arm;
  // unset: one interval.
  std::optional<absl::Duration> warmup;
  int min_samples = 10;
  double confidence = 0.95;
  int max_extensions = 2;
  InconclusivePolicy on_inconclusive = InconclusivePolicy::kRollback;
  // Shadow mode: every verdict is computed and reported, but one that would roll back (a
  // Fail, or an Inconclusive that onInconclusive: Rollback ends) does not; the step runs
  // its duration and advances as a Pass would (state_machine.h).
  bool dry_run = false;
  // Mode Metrics only: see BaselinePolicy. Time mode judges nothing and starts no baseline.
  BaselinePolicy baseline = BaselinePolicy::kFresh;
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

// spec.search: the tuning search (docs/search.md). One candidate knob: `knob` as the spec
// names it ("runtime.go.gogc", or "sysctl net.core.somaxconn" for `sysctl:`), `path` the
// JSON pointer into TuningToJson's object, `values` as TuningToJson writes them.
struct SearchKnob {
  std::string knob;
  std::string path;
  std::vector<Json> values;
};
struct SearchSpec {
  std::vector<SearchKnob> knobs;
  std::string objective;  // a metric name (metric_names.h)
  double min_improvement_percent = 5;
  int max_trials = 8;
};

struct ProfileSpec {
  TargetRef target_ref;
  Tuning tuning;
  RolloutSpec rollout;
  std::optional<SearchSpec> search;
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
  // The verdict would have rolled the rollout back and did not: analysis.dryRun was set.
  bool dry_run = false;

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
// status.analysisTemplate: the shared analysis template the profile is judged with
// (analysis_template.h); its generation tells which version of it.
struct AnalysisTemplateStatus {
  std::string kind;
  std::string name;
  int64_t generation = 0;

  bool operator==(const AnalysisTemplateStatus&) const = default;
};

struct RolloutStatus {
  Phase phase = Phase::kPending;
  int64_t observed_generation = 0;
  int current_step = 0;  // 1-based index into spec.rollout.steps; 0 = no step yet
  int canary_weight = 0;
  int total_replicas = 0;     // N
  int original_replicas = 0;  // target replicas when the rollout started
  int stable_replicas = 0;    // target replicas the operator wants
  int canary_replicas = 0;    // canary replicas the operator wants
  // Replicas of the fresh baseline Deployment the operator wants (analysis.baseline Fresh):
  // as many as the canary, taken from the target's share; 0 = the step has none and the
  // canary is compared with the target's pods.
  int baseline_replicas = 0;
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
  // ExperimentHash of the spec the current step was started with; another one restarts the
  // step (both arms re-templated, a new analysis window). "" = not recorded yet.
  std::string experiment_hash;
  // The tuning the target's baseline arm carries during this rollout (TuningToJson, as
  // text): the one an earlier rollout promoted, which a rollback keeps; "" = none (the
  // target is only enrolled, and a rollback gives it back without Booster's layer).
  std::string baseline_tuning;
  absl::Time phase_start_time = absl::InfinitePast();
  absl::Time step_start_time = absl::InfinitePast();
  absl::Time analysis_start_time = absl::InfinitePast();
  // Since when the step's pods, ready before, are not all ready (a pod restarted, the app
  // scaled): the progress deadline counts from here, not from the step's start.
  absl::Time not_ready_since = absl::InfinitePast();
  int extensions = 0;
  HandledControls handled;
  std::optional<Transition> last_transition;
  std::optional<Decision> last_decision;
  std::optional<ArmsReport> arms;  // set while a step is analysed
  std::vector<Condition> conditions;
  // status.search: the search's trial table (operator/search/driver.h writes it; the
  // rollout state machine carries it through untouched). null = no search.
  Json search;
  // The template spec.rollout.analysis.templateRef names, as last used; nullopt = none.
  std::optional<AnalysisTemplateStatus> analysis_template;

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

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_TYPES_H_
