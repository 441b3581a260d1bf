#include "sidecar/reporter.h"

#include <cerrno>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sidecar/file_util.h"
#include "sidecar/json_writer.h"
#include "sidecar/render.h"

namespace booster::agent {
namespace {

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::string HelloJson(const HelloInfo& info) {
  JsonWriter w;
  w.BeginObject();
  w.Key("type");
  w.String("hello");
  w.Key("pod");
  w.String(info.pod);
  w.Key("arm");
  w.String(info.arm);
  w.Key("agent_version");
  w.String(info.agent_version);
  w.Key("topology");
  w.String(info.topology_summary);
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
  if (s.plan.has_value()) {
    w.Key("plan");
    WritePlanJson(*s.plan, &w);
  }
  w.EndObject();
  return w.str();
}

std::string ReportJson(const WindowReport& r, const std::string& pod, const std::string& arm) {
  JsonWriter w;
  w.BeginObject();
  w.Key("type");
  w.String("report");
  w.Key("pod");
  w.String(pod);
  w.Key("arm");
  w.String(arm);
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
