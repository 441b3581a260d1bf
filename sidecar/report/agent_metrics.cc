#include "sidecar/report/agent_metrics.h"

#include <unistd.h>

#include <cmath>
#include <exception>
#include <functional>

#include "CivetServer.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/proc_stats.h"

namespace booster::agent {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

void Respond(mg_connection* conn, int code, const char* content_type, const std::string& body) {
  const char* text = code == 200 ? "OK" : code == 503 ? "Service Unavailable" : "Error";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            code, text, content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

}  // namespace

// One GET endpoint: a function from nothing to (status, content type, body).
class MetricsServer::Handler final : public CivetHandler {
 public:
  struct Answer {
    int code = 200;
    const char* content_type = "text/plain; charset=utf-8";
    std::string body;
  };
  explicit Handler(std::function<Answer()> answer) : answer_(std::move(answer)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    Answer a;
    try {
      a = answer_();
    } catch (const std::exception& e) {
      a = Answer{500, "text/plain; charset=utf-8", absl::StrCat(e.what(), "\n")};
    }
    Respond(conn, a.code, a.content_type, a.body);
    return true;
  }

 private:
  std::function<Answer()> answer_;
};

AgentMetrics::AgentMetrics(std::string pod, Clock* clock)
    : pod_(std::move(pod)), clock_(clock), registry_(std::make_shared<prometheus::Registry>()) {
  last_heartbeat_ = clock_->Now();
  prometheus::Labels pod_label = {{"pod", pod_}};
  auto counter = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(*registry_).Add(pod_label);
  };
  auto single_gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*registry_).Add(pod_label);
  };
  up_ = single_gauge("booster_agent_up", "1 while the agent runs.");
  up_->Set(1);
  healthy_ = single_gauge("booster_agent_healthy",
                          "1 while /healthz answers 200 (the loop runs and ticks).");
  samples_ = counter("booster_agent_samples_total", "Samples taken.");
  sample_errors_ = counter("booster_agent_sample_errors_total", "Samples that failed.");
  sample_seconds_ =
      single_gauge("booster_agent_sample_duration_seconds", "Time the last sample took.");
  scrapes_ = counter("booster_agent_app_scrapes_total", "Scrapes of the application's metrics.");
  scrape_errors_ = counter("booster_agent_app_scrape_errors_total",
                           "Scrapes of the application's metrics that failed.");
  windows_ = counter("booster_agent_windows_total", "Report windows closed.");
  sequence_ = single_gauge("booster_agent_window_sequence",
                           "Sequence number of the last window of this agent process.");
  applied_ = counter("booster_agent_directives_total", "Directives handled.");
  applied_failures_ = counter("booster_agent_directive_failures_total",
                              "Directives that failed and were reverted.");
  generation_ = single_gauge("booster_agent_directive_generation",
                             "Generation of the last directive handled.");
  cpu_seconds_ = counter("booster_agent_cpu_seconds_total",
                         "CPU time of the agent process itself, user and system.");
  resident_bytes_ =
      single_gauge("booster_agent_resident_memory_bytes", "Resident memory of the agent process.");
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*registry_);
  };
  info_family_ = gauge("booster_agent_info",
                       "1, labelled with the arm the agent measures, its node and version.");
  knob_outcome_ = gauge("booster_agent_knob_outcome",
                        "1 for every knob of the directive in force, by outcome: applied, "
                        "not_reachable (cannot act on the program) or failed.");
  {
    absl::MutexLock l(&mu_);
    ResetInfo();
  }
  window_value_ = gauge("booster_agent_window_value",
                        "Value of each judged metric in the last window; no series while the "
                        "metric is missing (it is never reported as 0 instead).");
  window_samples_ = gauge("booster_agent_window_samples",
                          "Observations behind each judged metric in the last window "
                          "(requests or ticks); 0 while missing.");
  cpu_cores_ = gauge("booster_pod_cpu_cores", "CPU used in the last window, in cores.");
  throttled_ratio_ = gauge("booster_pod_cpu_throttled_ratio",
                           "Throttled CFS periods / periods in the last window; no series while "
                           "the app's cgroup cpu.stat is not read (never a 0 instead).");
  throttled_seconds_ = gauge("booster_pod_cpu_throttled_seconds",
                             "Time throttled in the last window; no series while the app's "
                             "cgroup cpu.stat is not read.");
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
  ResetInfo();
}

void AgentMetrics::SetIdentity(const std::string& node, const std::string& version) {
  absl::MutexLock l(&mu_);
  node_ = node;
  version_ = version;
  ResetInfo();
}

void AgentMetrics::ResetInfo() {
  if (info_ != nullptr) info_family_->Remove(info_);
  info_ = &info_family_->Add({{"pod", pod_}, {"arm", arm_}, {"node", node_}, {"version", version_}});
  info_->Set(1);
}

void AgentMetrics::ObserveTuning(const AppliedStatus& status) {
  absl::MutexLock l(&mu_);
  for (prometheus::Gauge* g : knobs_) knob_outcome_->Remove(g);
  knobs_.clear();
  auto add = [&](const std::string& knob, const char* outcome) {
    prometheus::Gauge& g = knob_outcome_->Add(
        {{"pod", pod_}, {"arm", status.arm}, {"knob", knob}, {"outcome", outcome}});
    g.Set(1);
    knobs_.push_back(&g);
  };
  // All or nothing, as the operator is told (FeedbackAppliedFromStatus): a directive that
  // failed left none of its knobs in force.
  for (const std::string& k : status.knobs) {
    add(k, !status.ok                        ? "failed"
           : status.unreachable.count(k) != 0 ? "not_reachable"
                                              : "applied");
  }
  // A failure that is no knob's: the directive could not start, or a revert failed.
  if (!status.ok && status.knobs.empty()) {
    add(status.action == "apply" ? "directive" : "revert", "failed");
  }
}

void AgentMetrics::RefreshProcessMetrics() {
  absl::MutexLock l(&process_mu_);
  absl::StatusOr<std::string> text = ReadFile("/proc/self/stat");
  if (!text.ok()) return;
  absl::StatusOr<ProcStat> stat = ParseProcStat(*text);
  if (!stat.ok()) return;
  static const double kTicksPerSecond = static_cast<double>(sysconf(_SC_CLK_TCK));
  static const double kPageBytes = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double cpu = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / kTicksPerSecond;
  // The kernel's total only grows; a Counter only goes up by steps.
  if (cpu > cpu_seconds_->Value()) cpu_seconds_->Increment(cpu - cpu_seconds_->Value());
  resident_bytes_->Set(static_cast<double>(stat->rss_pages) * kPageBytes);
}

prometheus::Labels AgentMetrics::FigureLabels(const prometheus::Labels& extra) const {
  prometheus::Labels labels = extra;
  labels["pod"] = pod_;
  labels["arm"] = arm_;
  return labels;
}

void AgentMetrics::SetFigure(prometheus::Family<prometheus::Gauge>* f, double v,
                             const prometheus::Labels& extra) {
  prometheus::Gauge& g = f->Add(FigureLabels(extra));
  bool known = false;
  for (const auto& [family, gauge] : figures_) known |= gauge == &g;
  if (!known) figures_.emplace_back(f, &g);
  g.Set(std::isfinite(v) ? v : 0);
}

void AgentMetrics::RemoveFigure(prometheus::Family<prometheus::Gauge>* f,
                                const prometheus::Labels& extra) {
  prometheus::Labels labels = FigureLabels(extra);
  if (!f->Has(labels)) return;
  prometheus::Gauge* g = &f->Add(labels);
  for (auto it = figures_.begin(); it != figures_.end(); ++it) {
    if (it->second == g) {
      figures_.erase(it);
      break;
    }
  }
  f->Remove(g);
}

void AgentMetrics::ObserveSample(double seconds, bool ok) {
  samples_->Increment();
  if (!ok) sample_errors_->Increment();
  sample_seconds_->Set(seconds);
}

void AgentMetrics::ObserveScrape(bool ok) {
  scrapes_->Increment();
  if (!ok) scrape_errors_->Increment();
}

void AgentMetrics::ObserveApplied(bool ok, int64_t generation) {
  applied_->Increment();
  if (!ok) applied_failures_->Increment();
  generation_->Set(static_cast<double>(generation));
}

void AgentMetrics::ObserveWindow(const WindowRecord& record) {
  const WindowReport& r = record.report;
  windows_->Increment();
  sequence_->Set(static_cast<double>(record.sequence));
  absl::MutexLock l(&mu_);
  for (const MetricValue& m : record.metrics.metrics) {
    prometheus::Labels metric = {{"metric", m.name}};
    if (m.value.has_value()) {
      SetFigure(window_value_, *m.value, metric);
    } else {
      RemoveFigure(window_value_, metric);
    }
    SetFigure(window_samples_, static_cast<double>(m.samples), metric);
  }
  SetFigure(cpu_cores_, r.cpu_cores);
  // Throttling is read from the app's cgroup (cpu.stat), which the agent cannot always
  // read (another container's cgroup): unmeasured has no series, as a missing metric has
  // none, so that a 0 always means "not throttled".
  if (r.cpu_stat_ticks > 0) {
    SetFigure(throttled_ratio_, r.throttled_ratio);
    SetFigure(throttled_seconds_, r.throttled_seconds);
  } else {
    RemoveFigure(throttled_ratio_, {});
    RemoveFigure(throttled_seconds_, {});
  }
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

void AgentMetrics::EnableFeedbackMetrics(std::function<FeedbackClientStats()> stats) {
  auto f = std::make_unique<FeedbackSeries>();
  f->stats = std::move(stats);
  prometheus::Labels pod_label = {{"pod", pod_}};
  auto counter = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(*registry_).Add(pod_label);
  };
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*registry_).Add(pod_label);
  };
  f->connected = gauge("booster_agent_feedback_connected",
                       "1 while the stream to the operator is open (Hello written, not ended).");
  f->reconnects = counter("booster_agent_feedback_reconnects_total",
                          "Connection attempts to the operator after the first.");
  f->reports_sent = counter("booster_agent_feedback_reports_sent_total",
                            "Window reports written to the operator, replays after a "
                            "reconnect included.");
  f->reports_acked = counter("booster_agent_feedback_reports_acked_total",
                             "Window reports the operator acknowledged (stored, duplicate or "
                             "rejected).");
  f->reports_dropped = counter("booster_agent_feedback_reports_dropped_total",
                               "Window reports pushed out of the full buffer of "
                               "unacknowledged reports: never acknowledged.");
  f->reports_buffered = gauge("booster_agent_feedback_reports_buffered",
                              "Window reports held until the operator acknowledges them.");
  f->rejects = &BuildCounter()
                    .Name("booster_agent_feedback_rejects_total")
                    .Help("Window reports the operator refused, by its reason.")
                    .Register(*registry_);
  // The operator's reasons (docs/feedback.md) exist at 0 so that rate() sees the first.
  for (const char* reason : {"stale_template", "invalid_report", "no_step"}) {
    f->rejects->Add({{"pod", pod_}, {"reason", reason}});
  }
  absl::MutexLock l(&feedback_mu_);
  feedback_ = std::move(f);
}

void AgentMetrics::RefreshFeedbackMetrics() {
  absl::MutexLock l(&feedback_mu_);
  if (feedback_ == nullptr) return;
  const FeedbackClientStats s = feedback_->stats();
  // The client's counts are totals since it started; a Counter only goes up by steps.
  auto set_total = [](prometheus::Counter* c, uint64_t total) {
    const double v = static_cast<double>(total);
    if (v > c->Value()) c->Increment(v - c->Value());
  };
  feedback_->connected->Set(s.connected ? 1 : 0);
  set_total(feedback_->reconnects, s.reconnects);
  set_total(feedback_->reports_sent, s.reports_sent);
  set_total(feedback_->reports_acked, s.reports_acked);
  set_total(feedback_->reports_dropped, s.reports_dropped);
  feedback_->reports_buffered->Set(static_cast<double>(s.buffered));
  for (const auto& [reason, n] : s.rejects) {
    set_total(&feedback_->rejects->Add({{"pod", pod_}, {"reason", reason}}), n);
  }
}

void AgentMetrics::SetPhase(Phase phase) {
  absl::MutexLock l(&mu_);
  phase_ = phase;
  last_heartbeat_ = clock_->Now();
}

void AgentMetrics::Heartbeat() {
  absl::MutexLock l(&mu_);
  last_heartbeat_ = clock_->Now();
}

void AgentMetrics::SetStallTimeout(absl::Duration d) {
  absl::MutexLock l(&mu_);
  stall_timeout_ = d;
}

void AgentMetrics::SetDegraded(std::string why) {
  absl::MutexLock l(&mu_);
  degraded_ = std::move(why);
}

AgentMetrics::Health AgentMetrics::CurrentHealth() const {
  Health h;
  {
    absl::MutexLock l(&mu_);
    switch (phase_) {
      case Phase::kStarting:
        h.reason = "starting: recovering the journal and reading the topology";
        break;
      case Phase::kStopping:
        h.reason = "stopping: reverting every change";
        break;
      case Phase::kRunning: {
        absl::Duration since = clock_->Now() - last_heartbeat_;
        if (since > stall_timeout_) {
          h.reason = absl::StrCat("stalled: no tick completed for ", absl::FormatDuration(since));
        } else {
          h.ok = true;
          h.reason = degraded_.empty() ? "ok" : absl::StrCat("ok (degraded: ", degraded_, ")");
        }
        break;
      }
    }
  }
  healthy_->Set(h.ok ? 1 : 0);
  return h;
}

absl::StatusOr<std::string> CivetListeningPort(const std::string& address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  std::string port = colon == std::string::npos ? address : address.substr(colon + 1);
  int p = -1;
  if (!absl::SimpleAtoi(port, &p) || p < 0 || p > 65535 || port.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", address, "\" is not [address]:port, e.g. :9901 or 127.0.0.1:9901"));
  }
  if (host.empty()) return absl::StrCat(p);
  std::vector<std::string> octets = absl::StrSplit(host, '.');
  bool ipv4 = octets.size() == 4;
  for (const std::string& o : octets) {
    int v = -1;
    ipv4 &= !o.empty() && o.size() <= 3 && absl::SimpleAtoi(o, &v) && v >= 0 && v <= 255;
  }
  if (!ipv4) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", address, "\": the address must be an IPv4 address or empty (:", p, ")"));
  }
  return absl::StrCat(host, ":", p);
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    AgentMetrics* metrics) {
  absl::StatusOr<std::string> ports = CivetListeningPort(address);
  if (!ports.ok()) return ports.status();
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  std::shared_ptr<prometheus::Registry> registry = metrics->registry();
  s->metrics_handler_ = std::make_unique<Handler>([registry, metrics] {
    metrics->CurrentHealth();  // refreshes booster_agent_healthy
    metrics->RefreshFeedbackMetrics();
    metrics->RefreshProcessMetrics();
    Handler::Answer a;
    a.content_type = "text/plain; version=0.0.4; charset=utf-8";
    a.body = prometheus::TextSerializer().Serialize(registry->Collect());
    return a;
  });
  s->health_handler_ = std::make_unique<Handler>([metrics] {
    AgentMetrics::Health h = metrics->CurrentHealth();
    Handler::Answer a;
    a.code = h.ok ? 200 : 503;
    a.body = h.reason + "\n";
    return a;
  });
  try {
    std::vector<std::string> options = {"listening_ports", *ports, "num_threads", "2"};
    s->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics and /healthz on ", address, ": ", e.what()));
  }
  s->server_->addHandler("/metrics", s->metrics_handler_.get());
  s->server_->addHandler("/healthz", s->health_handler_.get());
  std::vector<int> listening = s->server_->getListeningPorts();
  s->port_ = listening.empty() ? 0 : listening.front();
  return s;
}

MetricsServer::~MetricsServer() = default;

}  // namespace booster::agent
