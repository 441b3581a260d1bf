#include "sidecar/sample/window_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace booster::agent {
namespace {

int64_t Count(double v) { return v > 0 ? static_cast<int64_t>(std::llround(v)) : 0; }

MetricValue Present(absl::string_view name, double value, int64_t samples) {
  MetricValue m;
  m.name = std::string(name);
  if (std::isfinite(value)) {
    m.value = value;
    m.samples = samples;
  } else {
    m.missing = "not a finite number";
  }
  return m;
}

MetricValue Missing(absl::string_view name, std::string why) {
  MetricValue m;
  m.name = std::string(name);
  m.missing = std::move(why);
  return m;
}

// Why the application's figures are not there at all, or "" when they are.
std::string NoScrape(bool present, const WindowReport& r) {
  if (present) return "";
  if (!r.app_error.empty()) return absl::StrCat("no application scrape: ", r.app_error);
  return "the application's metrics are not scraped";
}

std::string NoRequests(const WindowReport& r) { return NoScrape(r.requests.has_value(), r); }

std::string Notes(const RequestWindow& w) {
  return w.notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(w.notes, "; "), ")");
}

MetricValue Quantile(absl::string_view name, double q, const WindowReport& r) {
  if (std::string why = NoRequests(r); !why.empty()) return Missing(name, why);
  const RequestWindow& w = *r.requests;
  if (w.histogram.empty()) return Missing(name, "no latency histogram" + Notes(w));
  if (!(w.latency_count > 0)) return Missing(name, "no request observed in the window");
  return Present(name, BucketQuantile(q, w.latency_buckets), Count(w.latency_count));
}

bool HasRequests(const WindowReport& r) {
  return r.requests.has_value() && !r.requests->request_source.empty() && r.requests->seconds > 0;
}

MetricValue Throughput(const WindowReport& r) {
  constexpr absl::string_view kName = "throughput";
  if (std::string why = NoRequests(r); !why.empty()) return Missing(kName, why);
  if (!HasRequests(r))
    return Missing(kName, "no request counter or histogram" + Notes(*r.requests));
  return Present(kName, r.requests->requests / r.requests->seconds, Count(r.requests->requests));
}

MetricValue ErrorRate(const WindowReport& r) {
  constexpr absl::string_view kName = "errorRate";
  if (std::string why = NoRequests(r); !why.empty()) return Missing(kName, why);
  const RequestWindow& w = *r.requests;
  if (w.error_source.empty()) return Missing(kName, "no error label" + Notes(w));
  if (!(w.error_base > 0)) return Missing(kName, "no request in the window");
  return Present(kName, w.errors / w.error_base, Count(w.error_base));
}

bool CpuMeasured(const WindowReport& r) { return r.measured_ticks > 0 && r.measured_seconds > 0; }

MetricValue CpuPerRequest(const WindowReport& r) {
  constexpr absl::string_view kName = "cpuPerRequest";
  if (std::string why = NoRequests(r); !why.empty()) return Missing(kName, why);
  if (!HasRequests(r))
    return Missing(kName, "no request counter or histogram" + Notes(*r.requests));
  if (!(r.requests->requests > 0)) return Missing(kName, "no request in the window");
  if (!CpuMeasured(r)) return Missing(kName, "no CPU measured: no target process was read");
  // Both as rates, so the scrape interval and the tick window need not coincide exactly.
  double cores = r.cpu_seconds / r.measured_seconds;
  double per_second = r.requests->requests / r.requests->seconds;
  return Present(kName, cores / per_second, Count(r.requests->requests));
}

MetricValue CpuThrottling(const WindowReport& r) {
  constexpr absl::string_view kName = "cpuThrottling";
  if (!r.cpu_limited) return Missing(kName, "no CPU limit: CFS throttling cannot happen");
  if (r.cpu_stat_ticks == 0) return Missing(kName, "the cgroup's cpu.stat was not read");
  double ratio = r.nr_periods > 0
                     ? static_cast<double>(r.nr_throttled) / static_cast<double>(r.nr_periods)
                     : 0;  // no period ran: idle, nothing throttled
  return Present(kName, ratio, r.cpu_stat_ticks);
}

MetricValue RunQueueDelay(const WindowReport& r) {
  constexpr absl::string_view kName = "runQueueDelay";
  if (r.measured_ticks == 0 || !(r.measured_seconds > 0)) {
    return Missing(kName, "no target process was read");
  }
  return Present(kName, r.runq_wait_seconds / r.measured_seconds, r.measured_ticks);
}

MetricValue ListenOverflows(const WindowReport& r) {
  constexpr absl::string_view kName = "listenOverflows";
  if (r.net_ticks == 0 || !(r.net_seconds > 0)) {
    return Missing(kName, "the pod's /proc/net/netstat was not read");
  }
  return Present(kName, static_cast<double>(r.listen_overflows) / r.net_seconds, r.net_ticks);
}

MetricValue Retransmits(const WindowReport& r) {
  constexpr absl::string_view kName = "retransmits";
  if (r.net_ticks == 0) return Missing(kName, "the pod's /proc/net/snmp was not read");
  if (r.tcp_out_segs <= 0) return Missing(kName, "no TCP segment sent in the window");
  return Present(kName,
                 static_cast<double>(r.tcp_retrans_segs) / static_cast<double>(r.tcp_out_segs),
                 r.net_ticks);
}

MetricValue MemoryRss(const WindowReport& r) {
  constexpr absl::string_view kName = "memoryRss";
  if (r.rss_ticks == 0) return Missing(kName, "no target process was read");
  return Present(kName, static_cast<double>(r.rss_max_bytes), r.rss_ticks);
}

MetricValue GoGcCpuShare(const WindowReport& r) {
  constexpr absl::string_view kName = "goGcCpuShare";
  if (std::string why = NoScrape(r.go_runtime.has_value(), r); !why.empty()) {
    return Missing(kName, why);
  }
  const GoRuntimeWindow& g = *r.go_runtime;
  if (!g.gc_cpu_seconds.has_value()) {
    return Missing(kName,
                   absl::StrCat("the app exports no ", kGoGcCpuSecondsCounter,
                                " (client_golang: collectors.WithGoCollectorRuntimeMetrics)"));
  }
  if (!(g.seconds > 0)) return Missing(kName, "no time between the two scrapes");
  if (!CpuMeasured(r)) return Missing(kName, "no CPU measured: no target process was read");
  if (!(r.cpu_seconds > 0)) return Missing(kName, "the app used no CPU in the window");
  // Both as rates, as cpuPerRequest: the scrapes and the ticks cover nearly the same time.
  double gc_cores = *g.gc_cpu_seconds / g.seconds;
  double app_cores = r.cpu_seconds / r.measured_seconds;
  return Present(kName, std::max(0.0, gc_cores / app_cores), r.measured_ticks);
}

MetricValue GoHeapBytes(const WindowReport& r) {
  constexpr absl::string_view kName = "goHeapBytes";
  if (std::string why = NoScrape(r.go_runtime.has_value(), r); !why.empty()) {
    return Missing(kName, why);
  }
  if (!r.go_runtime->heap_bytes.has_value()) {
    return Missing(kName, absl::StrCat("the app exports no ", kGoHeapBytesGauge,
                                       " (client_golang's default Go collector)"));
  }
  return Present(kName, *r.go_runtime->heap_bytes, 1);
}

}  // namespace

const MetricValue* WindowMetrics::Find(absl::string_view name) const {
  for (const MetricValue& m : metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

WindowMetrics ComputeWindowMetrics(const WindowReport& r) {
  WindowMetrics out;
  out.metrics = {Quantile("latencyP50", 0.5, r),
                 Quantile("latencyP99", 0.99, r),
                 Quantile("latencyP999", 0.999, r),
                 Throughput(r),
                 ErrorRate(r),
                 CpuPerRequest(r),
                 CpuThrottling(r),
                 RunQueueDelay(r),
                 ListenOverflows(r),
                 Retransmits(r),
                 MemoryRss(r),
                 GoGcCpuShare(r),
                 GoHeapBytes(r)};
  return out;
}

}  // namespace booster::agent
