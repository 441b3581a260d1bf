#include "operator/feedback/proto_convert.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace booster::feedback {

namespace v1 = ::booster::v1;

HelloInfo HelloFromProto(const v1::Hello& h) {
  HelloInfo info;
  info.claimed_namespace = h.pod_namespace();
  info.claimed_pod = h.pod_name();
  info.claimed_uid = h.pod_uid();
  info.agent_version = h.agent_version();
  info.incarnation = h.incarnation();
  const v1::Topology& t = h.topology();
  info.topology.packages = t.packages();
  info.topology.numa_nodes = t.numa_nodes();
  info.topology.cores = t.cores();
  info.topology.pus = t.pus();
  info.topology.cpuset = t.cpuset();
  info.topology.cpu_quota_cores = t.cpu_quota_cores();
  info.topology.memory_limit_bytes = t.memory_limit_bytes();
  return info;
}

absl::StatusOr<Window> WindowFromProto(const v1::WindowReport& r, const AgentIdentity& agent) {
  Window w;
  w.pod = agent.pod_name;
  w.pod_uid = agent.pod_uid;
  w.pod_created = agent.pod_created;
  w.node = agent.node;
  w.incarnation = r.incarnation();
  w.sequence = r.sequence();
  w.start = absl::FromUnixNanos(r.start_unix_nanos());
  w.end = absl::FromUnixNanos(r.end_unix_nanos());
  w.template_hash = r.template_hash();
  w.profile_generation = r.profile_generation();
  for (const v1::Metric& m : r.metrics()) {
    std::optional<int> i = MetricIndex(m.name());
    if (!i) continue;
    if (w.metrics[*i]) {
      return absl::InvalidArgumentError(absl::StrCat("metric ", m.name(), " given twice"));
    }
    w.metrics[*i] = MetricValue{m.value(), m.samples()};
  }
  if (r.has_latency_histogram()) {
    const v1::LatencyHistogram& h = r.latency_histogram();
    if (h.upper_bounds_size() != h.counts_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("latency histogram has ", h.upper_bounds_size(), " bounds and ",
                       h.counts_size(), " counts"));
    }
    auto buckets = std::make_shared<Buckets>();
    buckets->reserve(static_cast<size_t>(h.counts_size()));
    for (int j = 0; j < h.counts_size(); ++j) buckets->emplace_back(h.upper_bounds(j), h.counts(j));
    w.latency_buckets = std::move(buckets);
  }
  if (absl::Status s = ValidateWindow(w); !s.ok()) return s;
  return w;
}

AppliedReport AppliedFromProto(const v1::Applied& a, absl::Time now) {
  AppliedReport r;
  r.generation = a.generation();
  r.received = now;
  for (const v1::KnobResult& k : a.knobs()) {
    KnobResult kr;
    kr.name = k.name();
    kr.reason = k.reason();
    switch (k.outcome()) {
      case v1::KNOB_OUTCOME_APPLIED:
        kr.outcome = KnobOutcome::kApplied;
        break;
      case v1::KNOB_OUTCOME_FAILED:
        kr.outcome = KnobOutcome::kFailed;
        break;
      case v1::KNOB_OUTCOME_NOT_REACHABLE:
        kr.outcome = KnobOutcome::kNotReachable;
        break;
      default:
        kr.outcome = KnobOutcome::kUnspecified;
        break;
    }
    r.knobs.push_back(std::move(kr));
  }
  return r;
}

std::optional<AppFacts> AppFactsFromProto(const v1::WindowReport& r) {
  auto printable = [](const std::string& s, size_t max) {
    if (s.size() > max) return false;
    for (char c : s) {
      if (c < 0x20 || c > 0x7e) return false;
    }
    return true;
  };
  AppFacts f;
  if (printable(r.go_version(), 64)) f.go_version = r.go_version();
  if (r.app_cpus() >= 1 && r.app_cpus() <= 4096) f.cpus = r.app_cpus();
  if (printable(r.go_default_godebug(), 1024)) f.go_default_godebug = r.go_default_godebug();
  if (f.go_version.empty() && f.cpus == 0) return std::nullopt;
  return f;
}

}  // namespace booster::feedback
