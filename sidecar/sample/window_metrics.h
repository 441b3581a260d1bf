// The per-window values of the metrics a BoosterProfile can judge (the CRD's analysis
// metric names), computed from one WindowReport. A metric the agent cannot compute for
// this pod in this window is missing — it has no value, never a 0 — with the reason, so
// the judge never mistakes "not measured" for "perfect". Pure.
//
//   WindowMetrics m = ComputeWindowMetrics(report);
//   const MetricValue* p99 = m.Find("latencyP99");
//   if (p99->value) Send(p99->name, *p99->value, p99->samples);
//   else Log(p99->name, " missing: ", p99->missing);
//
// Definitions (docs/agent.md has the table):
//   latencyP50/P99/P999  seconds; histogram_quantile over the window's bucket increases of
//                        the app's latency histogram, all label sets summed
//   throughput           requests per second between the two scrapes
//   errorRate            errors / requests of the family carrying the error label
//   cpuPerRequest        CPU core-seconds per request (CPU cores / throughput)
//   cpuThrottling        throttled CFS periods / periods (0 when no period ran)
//   runQueueDelay        seconds waited for a CPU per second, summed over threads
//   listenOverflows      accept-queue overflows per second in the pod's network namespace
//   retransmits          retransmitted TCP segments / segments sent
//   memoryRss            bytes; the targets' resident set summed, the highest of the ticks
//   goGcCpuShare         the Go GC's CPU seconds / the app's CPU seconds (GC rate over the
//                        scrape interval / CPU cores over the measured ticks); never
//                        negative, and may exceed 1: the runtime's GC CPU is an estimate
//                        that counts a stop-the-world pause as GOMAXPROCS busy CPUs
//   goHeapBytes          bytes; go_memstats_heap_alloc_bytes at the window's last scrape
#ifndef BOOSTER_SIDECAR_SAMPLE_WINDOW_METRICS_H_
#define BOOSTER_SIDECAR_SAMPLE_WINDOW_METRICS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "sidecar/sample/sampler.h"

namespace booster::agent {

// In the order of the CRD's enum (and operator/feedback/types.h).
inline constexpr std::array<absl::string_view, 13> kWindowMetricNames = {
    "latencyP50",    "latencyP99",    "latencyP999",   "throughput",      "errorRate",
    "cpuPerRequest", "cpuThrottling", "runQueueDelay", "listenOverflows", "retransmits",
    "memoryRss",     "goGcCpuShare",  "goHeapBytes"};

struct MetricValue {
  std::string name;
  std::optional<double> value;  // nullopt: missing in this window
  // Observations behind the value: requests (latency quantiles count the histogram's
  // observations) for the request-derived metrics, ticks for the kernel counters (memoryRss:
  // the ticks that read the resident set; goGcCpuShare: the ticks that measured the app's
  // CPU), 1 for goHeapBytes (one reading of a gauge). 0 when missing.
  int64_t samples = 0;
  std::string missing;  // why, when missing
};

struct WindowMetrics {
  std::vector<MetricValue> metrics;  // one per kWindowMetricNames, in that order
  // The entry named `name`; nullptr for a name not in kWindowMetricNames.
  const MetricValue* Find(absl::string_view name) const;
};

WindowMetrics ComputeWindowMetrics(const WindowReport& report);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_WINDOW_METRICS_H_
