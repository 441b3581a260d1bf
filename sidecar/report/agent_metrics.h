// The agent's own /metrics and /healthz, served from one port (BOOSTER_METRICS_ADDRESS,
// the container port `booster-agent`): agent health, the per-window value of every judged
// metric (booster_agent_window_value{metric}; a missing metric has no series), and the
// sampled figures of the last window labelled with pod and arm, so a Prometheus scraping
// the pod sees both arms side by side without the operator (the CPU throttling figures
// have no series in a window that could not read the app's cgroup cpu.stat). Also the agent itself:
// booster_agent_info{arm,node,version} (join on pod for the arm), the outcome of every knob
// of the directive in force (booster_agent_knob_outcome{arm,knob,outcome}), and the agent
// process's own CPU seconds and resident memory, read from /proc/self at every scrape.
//
// /healthz answers 200 while the agent loop runs and 503 while it starts, stops, or has
// not completed a tick for longer than the stall timeout — what a restart can fix. Sampling
// or scrape failures do not fail it (the body and /metrics say so): the agent's readiness
// is part of the pod's, and a probe failing on the application's behalf would take the
// pod out of its Service.
//
//   AgentMetrics m("web-7d9f-abcde");
//   m.SetIdentity(node, version);
//   absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start(":9901", &m);
//   m.SetPhase(AgentMetrics::Phase::kRunning);
//   after every directive: m.ObserveApplied(ok, generation); m.ObserveTuning(status);
//   every tick: m.Heartbeat();
//   every window: m.ObserveWindow(record);
//   streaming to the operator: m.EnableFeedbackMetrics([&] { return client->Stats(); });
#ifndef BOOSTER_SIDECAR_REPORT_AGENT_METRICS_H_
#define BOOSTER_SIDECAR_REPORT_AGENT_METRICS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "sidecar/feedback/client/feedback_types.h"
#include "sidecar/report/reporter.h"
#include "sidecar/sample/sampler.h"

class CivetServer;

namespace booster::agent {

class AgentMetrics {
 public:
  enum class Phase { kStarting, kRunning, kStopping };
  struct Health {
    bool ok = false;
    std::string reason;  // "ok", or why not; a degraded but running agent is ok
  };

  // `clock` (not owned) times the heartbeat; it must outlive this object.
  explicit AgentMetrics(std::string pod, Clock* clock = &RealClock::Get());
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void SetArm(const std::string& arm);
  // The node and agent version booster_agent_info carries besides pod and arm.
  void SetIdentity(const std::string& node, const std::string& version);
  void ObserveSample(double seconds, bool ok);
  void ObserveScrape(bool ok);
  void ObserveWindow(const WindowRecord& record);
  void ObserveApplied(bool ok, int64_t generation);
  // The tuning in force after a directive: booster_agent_knob_outcome{knob, outcome} 1 for
  // every knob of `status` (outcome applied, not_reachable or failed, as the agent reports
  // it to the operator), replacing the previous directive's series. Observe and rollback
  // put no knob in force, so they leave none. Bounded: one series per knob of the profile.
  void ObserveTuning(const AppliedStatus& status);
  // Reads the agent's own CPU time and resident memory from /proc/self into
  // booster_agent_cpu_seconds_total and booster_agent_resident_memory_bytes. MetricsServer
  // calls it before every scrape; a read that fails leaves the last values.
  void RefreshProcessMetrics();

  // The operator stream's figures (booster_agent_feedback_*, labelled with pod; rejects
  // also with reason), registered by this call — an agent that does not stream has none —
  // and read from `stats` at every scrape of /metrics. Call once, before serving.
  void EnableFeedbackMetrics(std::function<FeedbackClientStats()> stats);
  // Reads `stats` into the booster_agent_feedback_* series; no effect before
  // EnableFeedbackMetrics. MetricsServer calls it before every scrape.
  void RefreshFeedbackMetrics();

  // Health.
  void SetPhase(Phase phase);
  void Heartbeat();  // once per completed tick
  void SetStallTimeout(absl::Duration d);
  void SetDegraded(std::string why);  // "" when sampling works again
  Health CurrentHealth() const;

 private:
  void SetFigure(prometheus::Family<prometheus::Gauge>* f, double v,
                 const prometheus::Labels& extra = {}) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveFigure(prometheus::Family<prometheus::Gauge>* f, const prometheus::Labels& extra)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  prometheus::Labels FigureLabels(const prometheus::Labels& extra) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResetInfo() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string pod_;
  Clock* clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  mutable absl::Mutex mu_;
  std::string arm_ ABSL_GUARDED_BY(mu_) = "baseline";
  // Series labelled with the current arm, removed when the arm changes.
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> figures_
      ABSL_GUARDED_BY(mu_);
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kStarting;
  absl::Time last_heartbeat_ ABSL_GUARDED_BY(mu_);
  absl::Duration stall_timeout_ ABSL_GUARDED_BY(mu_) = absl::Seconds(60);
  std::string degraded_ ABSL_GUARDED_BY(mu_);
  std::string node_ ABSL_GUARDED_BY(mu_);
  std::string version_ ABSL_GUARDED_BY(mu_);
  prometheus::Gauge* info_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<prometheus::Gauge*> knobs_ ABSL_GUARDED_BY(mu_);

  prometheus::Gauge* up_;
  prometheus::Gauge* healthy_;
  prometheus::Counter* samples_;
  prometheus::Counter* sample_errors_;
  prometheus::Gauge* sample_seconds_;
  prometheus::Counter* scrapes_;
  prometheus::Counter* scrape_errors_;
  prometheus::Counter* windows_;
  prometheus::Gauge* sequence_;
  prometheus::Counter* applied_;
  prometheus::Counter* applied_failures_;
  prometheus::Gauge* generation_;
  prometheus::Family<prometheus::Gauge>* info_family_;
  prometheus::Family<prometheus::Gauge>* knob_outcome_;
  prometheus::Counter* cpu_seconds_;
  prometheus::Gauge* resident_bytes_;
  absl::Mutex process_mu_;  // one /proc/self read at a time (CivetWeb serves on two threads)
  prometheus::Family<prometheus::Gauge>* window_value_;
  prometheus::Family<prometheus::Gauge>* window_samples_;
  prometheus::Family<prometheus::Gauge>* cpu_cores_;
  prometheus::Family<prometheus::Gauge>* throttled_ratio_;
  prometheus::Family<prometheus::Gauge>* throttled_seconds_;
  prometheus::Family<prometheus::Gauge>* runq_delay_;
  prometheus::Family<prometheus::Gauge>* ctx_switches_;
  prometheus::Family<prometheus::Gauge>* page_faults_;
  prometheus::Family<prometheus::Gauge>* rss_;
  prometheus::Family<prometheus::Gauge>* listen_overflows_;
  prometheus::Family<prometheus::Gauge>* listen_drops_;
  prometheus::Family<prometheus::Gauge>* retrans_;
  prometheus::Family<prometheus::Gauge>* app_rate_;
  prometheus::Family<prometheus::Gauge>* app_quantile_;

  // booster_agent_feedback_*: null until EnableFeedbackMetrics.
  struct FeedbackSeries {
    std::function<FeedbackClientStats()> stats;
    prometheus::Gauge* connected = nullptr;
    prometheus::Counter* reconnects = nullptr;
    prometheus::Counter* reports_sent = nullptr;
    prometheus::Counter* reports_acked = nullptr;
    prometheus::Counter* reports_dropped = nullptr;
    prometheus::Gauge* reports_buffered = nullptr;
    prometheus::Family<prometheus::Counter>* rejects = nullptr;
  };
  absl::Mutex feedback_mu_;  // one refresh at a time (CivetWeb serves on two threads)
  std::unique_ptr<FeedbackSeries> feedback_ ABSL_GUARDED_BY(feedback_mu_);
};

// Serves GET /metrics (Prometheus text format 0.0.4) and GET /healthz (200 "ok" or 503
// with the reason) with CivetWeb, the way booster-operator serves its probes.
class MetricsServer {
 public:
  // `address` is ":9901" (every IPv4 interface), "0.0.0.0:9901", "127.0.0.1:0" (a free
  // port); kInvalidArgument when malformed, kUnavailable when it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              AgentMetrics* metrics);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  class Handler;
  MetricsServer() = default;
  std::unique_ptr<Handler> metrics_handler_;
  std::unique_ptr<Handler> health_handler_;
  std::unique_ptr<CivetServer> server_;  // declared last: stops before the handlers go
  int port_ = 0;
};

// ":9901" -> "9901", "0.0.0.0:9901" -> "0.0.0.0:9901": CivetWeb's listening_ports form.
// kInvalidArgument for anything but [IPv4 address]:port with port in 0..65535.
absl::StatusOr<std::string> CivetListeningPort(const std::string& address);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_REPORT_AGENT_METRICS_H_
