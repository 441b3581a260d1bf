#include "sidecar/metrics.h"

#include <cmath>
#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace booster::agent {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

class HealthCollectable : public prometheus::Collectable {
 public:
  explicit HealthCollectable(AgentMetrics* m) : m_(m) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f;
    f.name = "booster_agent_healthy";
    f.help = "1 while the agent samples and applies normally.";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric c;
    c.gauge.value = m_->healthy() ? 1 : 0;
    f.metric.push_back(c);
    return {f};
  }

 private:
  AgentMetrics* m_;
};

}  // namespace

AgentMetrics::AgentMetrics(std::string pod)
    : pod_(std::move(pod)), registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Labels pod_label = {{"pod", pod_}};
  up_ = &BuildGauge()
             .Name("booster_agent_up")
             .Help("1 while the agent runs.")
             .Register(*registry_)
             .Add(pod_label);
  up_->Set(1);
  samples_ = &BuildCounter()
                  .Name("booster_agent_samples_total")
                  .Help("Samples taken.")
                  .Register(*registry_)
                  .Add(pod_label);
  sample_errors_ = &BuildCounter()
                        .Name("booster_agent_sample_errors_total")
                        .Help("Samples that failed.")
                        .Register(*registry_)
                        .Add(pod_label);
  sample_seconds_ = &BuildGauge()
                         .Name("booster_agent_sample_duration_seconds")
                         .Help("Time the last sample took.")
                         .Register(*registry_)
                         .Add(pod_label);
  windows_ = &BuildCounter()
                  .Name("booster_agent_windows_total")
                  .Help("Report windows closed.")
                  .Register(*registry_)
                  .Add(pod_label);
  applied_ = &BuildCounter()
                  .Name("booster_agent_directives_total")
                  .Help("Directives handled.")
                  .Register(*registry_)
                  .Add(pod_label);
  applied_failures_ = &BuildCounter()
                           .Name("booster_agent_directive_failures_total")
                           .Help("Directives that failed and were reverted.")
                           .Register(*registry_)
                           .Add(pod_label);
  generation_ = &BuildGauge()
                     .Name("booster_agent_directive_generation")
                     .Help("Generation of the last directive handled.")
                     .Register(*registry_)
                     .Add(pod_label);
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*registry_);
  };
  cpu_cores_ = gauge("booster_pod_cpu_cores", "CPU used in the last window, in cores.");
  throttled_ratio_ = gauge("booster_pod_cpu_throttled_ratio",
                           "Throttled CFS periods / periods in the last window.");
  throttled_seconds_ =
      gauge("booster_pod_cpu_throttled_seconds", "Time throttled in the last window.");
  runq_delay_ = gauge("booster_pod_runqueue_delay_seconds_per_second",
                      "Run-queue wait summed over threads, per second, last window.");
  ctx_switches_ = gauge("booster_pod_context_switches_per_second",
                        "Context switches per second in the last window.");
  page_faults_ = gauge("booster_pod_page_faults_per_second", "Page faults per second.");
  rss_ = gauge("booster_pod_rss_bytes", "Resident memory of the targets (max in window).");
  listen_overflows_ =
      gauge("booster_pod_listen_overflows", "Accept-queue overflows in the last window.");
  listen_drops_ = gauge("booster_pod_listen_drops", "Listen drops in the last window.");
  retrans_ = gauge("booster_pod_tcp_retransmits", "TCP segments retransmitted in the window.");
  app_rate_ = gauge("booster_pod_app_rate",
                    "The application's counters as per-second rates over the last window.");
  app_quantile_ =
      gauge("booster_pod_app_quantile", "Window quantiles of the application's histograms.");
}

void AgentMetrics::SetArm(const std::string& arm) {
  absl::MutexLock l(&mu_);
  if (arm == arm_) return;
  for (auto& [family, gauge] : figures_) family->Remove(gauge);
  figures_.clear();
  arm_ = arm;
}

void AgentMetrics::SetFigure(prometheus::Family<prometheus::Gauge>* f, double v,
                             const prometheus::Labels& extra) {
  prometheus::Labels labels = extra;
  labels["pod"] = pod_;
  labels["arm"] = arm_;
  prometheus::Gauge& g = f->Add(labels);
  bool known = false;
  for (const auto& [family, gauge] : figures_) known |= gauge == &g;
  if (!known) figures_.emplace_back(f, &g);
  g.Set(std::isfinite(v) ? v : 0);
}

void AgentMetrics::ObserveSample(double seconds, bool ok) {
  samples_->Increment();
  if (!ok) sample_errors_->Increment();
  sample_seconds_->Set(seconds);
}

void AgentMetrics::ObserveApplied(bool ok, int64_t generation) {
  applied_->Increment();
  if (!ok) applied_failures_->Increment();
  generation_->Set(static_cast<double>(generation));
}

void AgentMetrics::ObserveWindow(const WindowReport& r) {
  windows_->Increment();
  absl::MutexLock l(&mu_);
  SetFigure(cpu_cores_, r.cpu_cores);
  SetFigure(throttled_ratio_, r.throttled_ratio);
  SetFigure(throttled_seconds_, r.throttled_seconds);
  SetFigure(runq_delay_, r.runq_delay_per_second);
  SetFigure(ctx_switches_, r.voluntary_cs_rate, {{"kind", "voluntary"}});
  SetFigure(ctx_switches_, r.involuntary_cs_rate, {{"kind", "involuntary"}});
  SetFigure(page_faults_, r.minor_fault_rate, {{"kind", "minor"}});
  SetFigure(page_faults_, r.major_fault_rate, {{"kind", "major"}});
  SetFigure(rss_, static_cast<double>(r.rss_max_bytes));
  SetFigure(listen_overflows_, static_cast<double>(r.listen_overflows));
  SetFigure(listen_drops_, static_cast<double>(r.listen_drops));
  SetFigure(retrans_, static_cast<double>(r.tcp_retrans_segs));
  if (r.app.has_value()) {
    for (const auto& [series, rate] : r.app->counter_rates) {
      SetFigure(app_rate_, rate, {{"series", series}});
    }
    for (const auto& [series, h] : r.app->histograms) {
      SetFigure(app_quantile_, h.p50, {{"series", series}, {"quantile", "0.5"}});
      SetFigure(app_quantile_, h.p90, {{"series", series}, {"quantile", "0.9"}});
      SetFigure(app_quantile_, h.p99, {{"series", series}, {"quantile", "0.99"}});
    }
  }
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    AgentMetrics* metrics) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  try {
    s->exposer_ = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics on ", address, ": ", e.what()));
  }
  s->exposer_->RegisterCollectable(metrics->registry(), "/metrics");
  s->health_ = std::make_shared<HealthCollectable>(metrics);
  s->exposer_->RegisterCollectable(s->health_, "/healthz");
  std::vector<int> ports = s->exposer_->GetListeningPorts();
  s->port_ = ports.empty() ? 0 : ports.front();
  return s;
}

MetricsServer::~MetricsServer() = default;

}  // namespace booster::agent
