// The agent's own /metrics (prometheus-cpp): agent health plus the sampled figures of
// the last window, labelled with pod and arm, so a Prometheus scraping the pod sees
// both arms side by side without the operator. Also serves /healthz.
//
//   AgentMetrics m("web-7d9f-abcde");
//   absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("0.0.0.0:9464", &m);
//   m.SetArm("canary");
//   m.ObserveWindow(report);
#ifndef BOOSTER_SIDECAR_METRICS_H_
#define BOOSTER_SIDECAR_METRICS_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "sidecar/sampler.h"

namespace prometheus {
class Exposer;
}

namespace booster::agent {

class AgentMetrics {
 public:
  explicit AgentMetrics(std::string pod);
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void SetArm(const std::string& arm);
  void ObserveSample(double seconds, bool ok);
  void ObserveWindow(const WindowReport& r);
  void ObserveApplied(bool ok, int64_t generation);
  void SetHealthy(bool healthy) { healthy_ = healthy; }
  bool healthy() const { return healthy_; }

 private:
  void SetFigure(prometheus::Family<prometheus::Gauge>* f, double v,
                 const prometheus::Labels& extra = {}) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string pod_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::atomic<bool> healthy_{true};
  absl::Mutex mu_;
  std::string arm_ ABSL_GUARDED_BY(mu_) = "baseline";
  // Series labelled with the current arm, removed when the arm changes.
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> figures_
      ABSL_GUARDED_BY(mu_);

  prometheus::Gauge* up_;
  prometheus::Counter* samples_;
  prometheus::Counter* sample_errors_;
  prometheus::Gauge* sample_seconds_;
  prometheus::Counter* windows_;
  prometheus::Counter* applied_;
  prometheus::Counter* applied_failures_;
  prometheus::Gauge* generation_;
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
};

// Serves /metrics and /healthz. /healthz answers 200 with `booster_agent_healthy 1|0`
// (prometheus-cpp cannot send other statuses; a probe that needs them checks the body).
class MetricsServer {
 public:
  // `address` like "127.0.0.1:0" or "0.0.0.0:9464"; kUnavailable when it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              AgentMetrics* metrics);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Collectable> health_;
  int port_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_METRICS_H_
