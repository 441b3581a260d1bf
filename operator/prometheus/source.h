// The analysis windows of the profiles' Prometheus metrics (docs/prometheus-metrics.md): for
// each profile in a step's analysis, each metric's query is evaluated for each arm at every
// interval boundary of the step (an instant query at that time, over that arm's pods), and
// each answer is one window of that arm, for the judge beside the agents' windows.
//
// The reconciler says what to measure (Track, at each reconcile of a step) and the judge
// reads what was measured (Windows, an analysis::WindowSource that never blocks); the
// queries run on a thread of their own (Start), never inside a reconcile. Each boundary is
// asked at its own time (`time=`), so a query answered late, or a leader that took over
// mid-step and asks for the boundaries it missed, measures the same window.
//
// A window of a Prometheus metric is an arm's, not a pod's: one value per arm per interval
// (the pod is "<arm> arm"), so minSamples counts intervals for it, and the judge's pairing
// has one unit per arm (its between-pod floor, JudgeOptions::pod_sd_floor, applies). Its
// pod start is the newest start among the arm's pods, so the warm-up drops the windows of a
// freshly started arm as it does the agents'.
//
//   PrometheusWindows windows(&querier, pods, &observer, &clock);
//   windows.Track("shop/web", Tracked{...});   // from the reconcile observer
//   windows.Start();
//   absl::StatusOr<analysis::ArmWindows> w = windows.Windows(query);  // from the judge
#ifndef BOOSTER_OPERATOR_PROMETHEUS_SOURCE_H_
#define BOOSTER_OPERATOR_PROMETHEUS_SOURCE_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/prometheus/query.h"
#include "operator/rollout/profile/types.h"

namespace booster::promql {

// Asks Prometheus one instant query at `at`. Implementations report an unreachable server
// or an answer that is not the API's as QueryOutcome::kError with a message; thread-safe.
class Querier {
 public:
  virtual ~Querier() = default;
  virtual QueryResult Query(const std::string& promql, absl::Time at) = 0;
};

// The running pods of an arm: their names, and the latest start among them.
struct ArmPods {
  std::vector<std::string> names;
  absl::Time newest_start = absl::InfinitePast();
};
// The pods of `ns` whose pod template carries `marker` (rollout::TemplateMarker).
using PodLister = std::function<ArmPods(const std::string& ns, const std::string& marker)>;

// The arms, in the order of Tracked::markers and of reports.
inline constexpr std::array<const char*, 2> kArms = {"baseline", "canary"};

// What to measure for one profile: its current step and the Prometheus metrics of its
// analysis.
struct Tracked {
  std::string ns;
  std::string name;
  // The step: a change of any of these starts afresh (the windows of the step before are
  // dropped).
  int64_t generation = 0;
  int step = 0;
  absl::Time step_started = absl::InfinitePast();
  // Both arms ready since (status.analysisStartTime); InfinitePast: not yet, nothing due.
  absl::Time analysis_start = absl::InfinitePast();
  absl::Duration interval = absl::Seconds(30);
  // The metrics with a prometheus query (the others are the agents').
  std::vector<rollout::MetricSpec> metrics;
  // The template marker of each arm's pods: baseline, canary ("" = not known, not asked).
  std::array<std::string, 2> markers;
};

// The analysis metrics of `spec` that are Prometheus metrics.
std::vector<rollout::MetricSpec> PrometheusMetrics(const rollout::AnalysisSpec& spec);

// One query's outcome, for the metric and the Event.
struct QueryReport {
  std::string ns;
  std::string profile;
  std::string metric;
  std::string arm;    // kArms
  std::string query;  // as sent (placeholders filled in); the template when it could not be
  absl::Time at;      // the boundary asked about
  QueryResult result;
  // The outcome differs from this metric and arm's previous one in the step (or is its
  // first): a failure worth an Event; `recovered`: a value after a failure.
  bool changed = false;
  bool recovered = false;
};

class QueryObserver {
 public:
  virtual ~QueryObserver() = default;
  // Called on the query thread, without any lock of the source held.
  virtual void Answered(const QueryReport& report) = 0;
};

struct SourceOptions {
  // A boundary is asked this long after it passed: Prometheus has scraped up to it by then.
  // The judge's look waits JudgeSourceOptions::report_grace (2 s) after a boundary.
  absl::Duration delay = absl::Milliseconds(500);
  // At most this many boundaries per arm and metric are kept, and asked for when catching
  // up (the newest).
  int max_windows = 1024;
  // Queries sent per round before the newest boundaries are looked at again.
  int max_queries_per_round = 64;
};

class PrometheusWindows final : public analysis::WindowSource {
 public:
  // Nothing is owned; each must outlive this object.
  PrometheusWindows(Querier* querier, PodLister pods, QueryObserver* observer, Clock* clock,
                    SourceOptions options = SourceOptions());
  ~PrometheusWindows() override;  // Stop()s
  PrometheusWindows(const PrometheusWindows&) = delete;
  PrometheusWindows& operator=(const PrometheusWindows&) = delete;

  // What `key` ("ns/name") measures now; no metrics: Forget.
  void Track(const std::string& key, Tracked tracked);
  void Forget(const std::string& key);

  // The step's windows of the Prometheus metrics, those starting at or after query.since;
  // none (not an error) for a profile or step not tracked.
  absl::StatusOr<analysis::ArmWindows> Windows(const analysis::WindowQuery& query) override;

  // Asks every boundary due by `now` (at most max_queries_per_round queries), and returns
  // when the next one is due (InfiniteFuture: none tracked). The thread's loop; tests call
  // it directly.
  absl::Time RunDue(absl::Time now);

  void Start();
  void Stop();

 private:
  struct Series {
    std::vector<analysis::Window> windows;  // by boundary, oldest first
    std::optional<QueryOutcome> last;
  };
  struct Entry {
    Tracked tracked;
    int next_boundary = 1;  // the first boundary (1-based) not asked yet
    // metric name -> per arm.
    std::map<std::string, std::array<Series, 2>> series;
  };
  static bool SameStep(const Tracked& a, const Tracked& b);

  Querier* const querier_;
  const PodLister pods_;
  QueryObserver* const observer_;
  Clock* const clock_;
  const SourceOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;  // guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  bool woken_ = false;                    // guarded by mu_: Track() added work
  std::thread thread_;
};

// The windows of two sources together (the agents' and Prometheus's), by metric name; an
// error of either is the answer.
class CombinedWindowSource final : public analysis::WindowSource {
 public:
  // Not owned.
  CombinedWindowSource(analysis::WindowSource* first, analysis::WindowSource* second)
      : first_(first), second_(second) {}
  absl::StatusOr<analysis::ArmWindows> Windows(const analysis::WindowQuery& query) override;

 private:
  analysis::WindowSource* const first_;
  analysis::WindowSource* const second_;
};

}  // namespace booster::promql

#endif  // BOOSTER_OPERATOR_PROMETHEUS_SOURCE_H_
