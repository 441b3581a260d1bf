#include "sidecar/report/json_lines_reporter.h"

#include <cerrno>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sidecar/base/file_util.h"
#include "sidecar/base/json_line.h"
#include "sidecar/plan/plan_render.h"

namespace booster::agent {
namespace {

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

void AddIdentity(const AgentIdentity& id, nlohmann::ordered_json* j) {
  for (const auto& [key, value] :
       {std::pair{"namespace", &id.pod_namespace}, std::pair{"pod", &id.pod_name},
        std::pair{"pod_uid", &id.pod_uid}, std::pair{"node", &id.node_name},
        std::pair{"profile", &id.profile}, std::pair{"arm", &id.arm}, std::pair{"mode", &id.mode},
        std::pair{"template_hash", &id.template_hash}, std::pair{"incarnation", &id.incarnation}}) {
    (*j)[key] = *value;
  }
}

}  // namespace

std::string HelloJson(const HelloInfo& info) {
  nlohmann::ordered_json j;
  j["type"] = "hello";
  AddIdentity(info.identity, &j);
  j["agent_version"] = info.identity.agent_version;
  j["topology"] = info.topology_summary;
  j["cpuset"] = info.topology.cpuset;
  j["cpu_quota_cores"] = info.topology.cpu_quota_cores;
  j["memory_limit_bytes"] = info.topology.memory_limit_bytes;
  return JsonLine(j);
}

std::string AppliedJson(const AppliedStatus& s) {
  nlohmann::ordered_json j;
  j["type"] = "applied";
  j["generation"] = s.generation;
  j["arm"] = s.arm;
  j["action"] = s.action;
  j["ok"] = s.ok;
  j["applied"] = s.applied;
  j["failed"] = s.failed;
  j["target_pids"] = s.target_pids;
  if (!s.knob_notes.empty()) {
    nlohmann::ordered_json& notes = j["knob_notes"];
    for (const auto& [knob, note] : s.knob_notes) notes[knob] = note;
  }
  if (s.plan.has_value()) j["plan"] = PlanJson(*s.plan);
  return JsonLine(j);
}

std::string ReportJson(const WindowRecord& record) {
  const WindowReport& r = record.report;
  nlohmann::ordered_json j;
  j["type"] = "report";
  AddIdentity(record.identity, &j);
  j["sequence"] = record.sequence;
  j["generation"] = record.generation;
  // The judged metrics: value null when missing, with the reason.
  nlohmann::ordered_json& metrics = j["metrics"] = nlohmann::ordered_json::object();
  for (const MetricValue& m : record.metrics.metrics) {
    nlohmann::ordered_json& metric = metrics[m.name];
    metric["value"] = m.value.has_value() ? nlohmann::ordered_json(*m.value) : nullptr;
    metric["samples"] = m.samples;
    if (!m.value.has_value()) metric["missing"] = m.missing;
  }
  if (r.requests.has_value()) {
    const RequestWindow& q = *r.requests;
    nlohmann::ordered_json& requests = j["requests"];
    requests["seconds"] = q.seconds;
    requests["histogram"] = q.histogram;
    requests["latency_count"] = q.latency_count;
    requests["request_source"] = q.request_source;
    requests["requests"] = q.requests;
    requests["error_source"] = q.error_source;
    requests["errors"] = q.errors;
    requests["notes"] = q.notes;
  }
  if (r.go_runtime.has_value()) {
    // The Go runtime's series as read; null when the application does not export them.
    auto or_null = [](const std::optional<double>& v) {
      return v.has_value() ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
    };
    nlohmann::ordered_json& go = j["go_runtime"];
    go["seconds"] = r.go_runtime->seconds;
    go["gc_cpu_seconds"] = or_null(r.go_runtime->gc_cpu_seconds);
    go["heap_bytes"] = or_null(r.go_runtime->heap_bytes);
  }
  j["start"] = Rfc3339(r.start);
  j["end"] = Rfc3339(r.end);
  j["seconds"] = r.seconds;
  j["ticks"] = r.ticks;
  j["tick_errors"] = r.tick_errors;
  j["processes"] = r.processes;
  j["threads"] = r.threads;
  j["cpu_cores"] = r.cpu_cores;
  j["nr_periods"] = r.nr_periods;
  j["nr_throttled"] = r.nr_throttled;
  j["throttled_ratio"] = r.throttled_ratio;
  j["throttled_seconds"] = r.throttled_seconds;
  j["runq_delay_per_second"] = r.runq_delay_per_second;
  j["runq_delay_avg_us"] = r.runq_delay_avg_us;
  j["voluntary_cs_per_second"] = r.voluntary_cs_rate;
  j["involuntary_cs_per_second"] = r.involuntary_cs_rate;
  j["minor_faults_per_second"] = r.minor_fault_rate;
  j["major_faults_per_second"] = r.major_fault_rate;
  j["rss_max_bytes"] = r.rss_max_bytes;
  j["rss_last_bytes"] = r.rss_last_bytes;
  j["go_version"] = r.go_version;
  j["go_default_godebug"] = r.go_default_godebug;
  j["app_cpus"] = r.app_cpus;
  j["listen_overflows"] = r.listen_overflows;
  j["listen_drops"] = r.listen_drops;
  j["tcp_retrans_segs"] = r.tcp_retrans_segs;
  j["tcp_out_segs"] = r.tcp_out_segs;
  j["tcp_retrans_ratio"] = r.tcp_retrans_ratio;
  if (r.app.has_value()) {
    nlohmann::ordered_json& app = j["app"];
    nlohmann::ordered_json& rates = app["counter_rates"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.app->counter_rates) rates[k] = v;
    nlohmann::ordered_json& histograms = app["histograms"] = nlohmann::ordered_json::object();
    for (const auto& [k, h] : r.app->histograms) {
      histograms[k] = {{"count", h.count}, {"rate", h.rate}, {"mean", h.mean},
                       {"p50", h.p50},     {"p90", h.p90},   {"p99", h.p99}};
    }
    nlohmann::ordered_json& summaries = app["summaries"] = nlohmann::ordered_json::object();
    for (const auto& [k, s] : r.app->summaries) {
      nlohmann::ordered_json& summary = summaries[k];
      summary["count"] = s.count;
      summary["mean"] = s.mean;
      for (const auto& [q, v] : s.quantiles) summary[absl::StrCat("q", q)] = v;
    }
  } else if (!r.app_error.empty()) {
    j["app_error"] = r.app_error;
  }
  return JsonLine(j);
}

absl::StatusOr<std::unique_ptr<JsonLinesReporter>> JsonLinesReporter::Open(
    const std::string& path) {
  if (path == "-" || path.empty()) {
    return std::unique_ptr<JsonLinesReporter>(new JsonLinesReporter(stdout, false));
  }
  FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) return ErrnoStatus(errno, "open report file " + path);
  return std::unique_ptr<JsonLinesReporter>(new JsonLinesReporter(f, true));
}

JsonLinesReporter::~JsonLinesReporter() {
  if (owned_) std::fclose(file_);
}

void JsonLinesReporter::Write(const std::string& line) {
  absl::MutexLock l(&mu_);
  std::fputs(line.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

}  // namespace booster::agent
