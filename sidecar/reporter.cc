#include "sidecar/reporter.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sidecar/file_util.h"
#include "sidecar/json_writer.h"
#include "sidecar/render.h"

namespace booster::agent {
namespace {

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

void WriteIdentity(const AgentIdentity& id, JsonWriter* w) {
  for (const auto& [key, value] :
       {std::pair{"namespace", &id.pod_namespace}, std::pair{"pod", &id.pod_name},
        std::pair{"pod_uid", &id.pod_uid}, std::pair{"node", &id.node_name},
        std::pair{"profile", &id.profile}, std::pair{"arm", &id.arm}, std::pair{"mode", &id.mode},
        std::pair{"template_hash", &id.template_hash}, std::pair{"incarnation", &id.incarnation}}) {
    w->Key(key);
    w->String(*value);
  }
}

}  // namespace

std::string NewIncarnation() {
  unsigned char bytes[16] = {0};
  FILE* f = std::fopen("/dev/urandom", "rbe");
  size_t n = f != nullptr ? std::fread(bytes, 1, sizeof(bytes), f) : 0;
  if (f != nullptr) std::fclose(f);
  if (n != sizeof(bytes)) {
    // No /dev/urandom (a very bare image): time and pid still differ per run.
    uint64_t t = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    uint64_t p = static_cast<uint64_t>(getpid());
    std::memcpy(bytes, &t, sizeof(t));
    std::memcpy(bytes + 8, &p, sizeof(p));
  }
  std::string out;
  for (unsigned char b : bytes) absl::StrAppend(&out, absl::Hex(b, absl::kZeroPad2));
  return out;
}

std::string HelloJson(const HelloInfo& info) {
  JsonWriter w;
  w.BeginObject();
  w.Key("type");
  w.String("hello");
  WriteIdentity(info.identity, &w);
  w.Key("agent_version");
  w.String(info.identity.agent_version);
  w.Key("topology");
  w.String(info.topology_summary);
  w.Key("cpuset");
  w.String(info.topology.cpuset);
  w.Key("cpu_quota_cores");
  w.Double(info.topology.cpu_quota_cores);
  w.Key("memory_limit_bytes");
  w.Int(info.topology.memory_limit_bytes);
  w.EndObject();
  return w.str();
}

std::string AppliedJson(const AppliedStatus& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("type");
  w.String("applied");
  w.Key("generation");
  w.Int(s.generation);
  w.Key("arm");
  w.String(s.arm);
  w.Key("action");
  w.String(s.action);
  w.Key("ok");
  w.Bool(s.ok);
  w.Key("applied");
  w.StringArray(s.applied);
  w.Key("failed");
  w.StringArray(s.failed);
  w.Key("target_pids");
  w.IntArray(s.target_pids);
  if (!s.knob_notes.empty()) {
    w.Key("knob_notes");
    w.BeginObject();
    for (const auto& [knob, note] : s.knob_notes) {
      w.Key(knob);
      w.String(note);
    }
    w.EndObject();
  }
  if (s.plan.has_value()) {
    w.Key("plan");
    WritePlanJson(*s.plan, &w);
  }
  w.EndObject();
  return w.str();
}

std::string ReportJson(const WindowRecord& record) {
  const WindowReport& r = record.report;
  JsonWriter w;
  w.BeginObject();
  w.Key("type");
  w.String("report");
  WriteIdentity(record.identity, &w);
  w.Key("sequence");
  w.Uint(record.sequence);
  w.Key("generation");
  w.Int(record.generation);
  // The judged metrics: value null when missing, with the reason.
  w.Key("metrics");
  w.BeginObject();
  for (const MetricValue& m : record.metrics.metrics) {
    w.Key(m.name);
    w.BeginObject();
    w.Key("value");
    if (m.value.has_value()) {
      w.Double(*m.value);
    } else {
      w.Null();
    }
    w.Key("samples");
    w.Int(m.samples);
    if (!m.value.has_value()) {
      w.Key("missing");
      w.String(m.missing);
    }
    w.EndObject();
  }
  w.EndObject();
  if (r.requests.has_value()) {
    const RequestWindow& q = *r.requests;
    w.Key("requests");
    w.BeginObject();
    w.Key("seconds");
    w.Double(q.seconds);
    w.Key("histogram");
    w.String(q.histogram);
    w.Key("latency_count");
    w.Double(q.latency_count);
    w.Key("request_source");
    w.String(q.request_source);
    w.Key("requests");
    w.Double(q.requests);
    w.Key("error_source");
    w.String(q.error_source);
    w.Key("errors");
    w.Double(q.errors);
    w.Key("notes");
    w.StringArray(q.notes);
    w.EndObject();
  }
  w.Key("start");
  w.String(Rfc3339(r.start));
  w.Key("end");
  w.String(Rfc3339(r.end));
  w.Key("seconds");
  w.Double(r.seconds);
  w.Key("ticks");
  w.Int(r.ticks);
  w.Key("tick_errors");
  w.Int(r.tick_errors);
  w.Key("processes");
  w.Int(r.processes);
  w.Key("threads");
  w.Int(r.threads);
  w.Key("cpu_cores");
  w.Double(r.cpu_cores);
  w.Key("nr_periods");
  w.Uint(r.nr_periods);
  w.Key("nr_throttled");
  w.Uint(r.nr_throttled);
  w.Key("throttled_ratio");
  w.Double(r.throttled_ratio);
  w.Key("throttled_seconds");
  w.Double(r.throttled_seconds);
  w.Key("runq_delay_per_second");
  w.Double(r.runq_delay_per_second);
  w.Key("runq_delay_avg_us");
  w.Double(r.runq_delay_avg_us);
  w.Key("voluntary_cs_per_second");
  w.Double(r.voluntary_cs_rate);
  w.Key("involuntary_cs_per_second");
  w.Double(r.involuntary_cs_rate);
  w.Key("minor_faults_per_second");
  w.Double(r.minor_fault_rate);
  w.Key("major_faults_per_second");
  w.Double(r.major_fault_rate);
  w.Key("rss_max_bytes");
  w.Uint(r.rss_max_bytes);
  w.Key("rss_last_bytes");
  w.Uint(r.rss_last_bytes);
  w.Key("listen_overflows");
  w.Int(r.listen_overflows);
  w.Key("listen_drops");
  w.Int(r.listen_drops);
  w.Key("tcp_retrans_segs");
  w.Int(r.tcp_retrans_segs);
  w.Key("tcp_out_segs");
  w.Int(r.tcp_out_segs);
  w.Key("tcp_retrans_ratio");
  w.Double(r.tcp_retrans_ratio);
  if (r.app.has_value()) {
    w.Key("app");
    w.BeginObject();
    w.Key("counter_rates");
    w.BeginObject();
    for (const auto& [k, v] : r.app->counter_rates) {
      w.Key(k);
      w.Double(v);
    }
    w.EndObject();
    w.Key("histograms");
    w.BeginObject();
    for (const auto& [k, h] : r.app->histograms) {
      w.Key(k);
      w.BeginObject();
      w.Key("count");
      w.Double(h.count);
      w.Key("rate");
      w.Double(h.rate);
      w.Key("mean");
      w.Double(h.mean);
      w.Key("p50");
      w.Double(h.p50);
      w.Key("p90");
      w.Double(h.p90);
      w.Key("p99");
      w.Double(h.p99);
      w.EndObject();
    }
    w.EndObject();
    w.Key("summaries");
    w.BeginObject();
    for (const auto& [k, s] : r.app->summaries) {
      w.Key(k);
      w.BeginObject();
      w.Key("count");
      w.Double(s.count);
      w.Key("mean");
      w.Double(s.mean);
      for (const auto& [q, v] : s.quantiles) {
        w.Key(absl::StrCat("q", q));
        w.Double(v);
      }
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  } else if (!r.app_error.empty()) {
    w.Key("app_error");
    w.String(r.app_error);
  }
  w.EndObject();
  return w.str();
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
