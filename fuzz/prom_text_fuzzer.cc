// The agent scrapes each application's /metrics (the application decides what it serves)
// and derives per-window figures from two scrapes (sidecar/sample/prom_text.h,
// sidecar/sample/app_metrics.h). The input is split at a fuzzer-chosen point into the scrape at
// the window's start and at its end. Checks: parsing never crashes or throws; a parsed
// scrape written back in the exposition format (label values escaped) parses to the same
// samples and types; distinct series never share a SeriesKey (the windows are keyed by
// it); two identical scrapes give a window with no observations; histogram quantiles are
// ordered p50 <= p90 <= p99; choosing the application's series and computing a request
// window never crash. An input starting with '{' is also parsed as the
// BOOSTER_APP_METRICS source (JSON, with a user regular expression).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "sidecar/sample/app_metrics.h"
#include "sidecar/sample/prom_text.h"

namespace {

namespace agent = booster::agent;

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return absl::StrFormat("%.17g", v);
}

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Write(const agent::PromScrape& s) {
  std::string out;
  for (const auto& [family, type] : s.types) absl::StrAppend(&out, "# TYPE ", family, " ", type, "\n");
  for (const agent::PromSample& x : s.samples) {
    out += x.name;
    if (!x.labels.empty()) {
      out += '{';
      for (const auto& [k, v] : x.labels) absl::StrAppend(&out, k, "=\"", Escape(v), "\",");
      out += '}';
    }
    absl::StrAppend(&out, " ", FormatValue(x.value), "\n");
  }
  return out;
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

void CheckScrape(const agent::PromScrape& s) {
  const std::string text = Write(s);
  absl::StatusOr<agent::PromScrape> back = agent::ParsePrometheusText(text);
  FUZZ_CHECK(back.ok(), "own rendering refused: %s\n%s", back.status().ToString().c_str(),
             text.c_str());
  FUZZ_CHECK(back->types == s.types, "types changed through\n%s", text.c_str());
  FUZZ_CHECK(back->samples.size() == s.samples.size(), "sample count changed through\n%s",
             text.c_str());
  for (size_t i = 0; i < s.samples.size(); ++i) {
    const agent::PromSample& a = s.samples[i];
    const agent::PromSample& b = back->samples[i];
    FUZZ_CHECK(a.name == b.name && a.labels == b.labels && SameValue(a.value, b.value),
               "sample %zu changed through\n%s", i, text.c_str());
  }

  std::map<std::string, std::pair<std::string, agent::PromLabels>> keys;
  for (const agent::PromSample& x : s.samples) {
    auto [it, inserted] = keys.emplace(agent::SeriesKey(x.name, x.labels),
                                       std::make_pair(x.name, x.labels));
    FUZZ_CHECK(inserted || (it->second.first == x.name && it->second.second == x.labels),
               "two series share the key %s", it->first.c_str());
  }

  bool finite = true;
  for (const agent::PromSample& x : s.samples) finite = finite && std::isfinite(x.value);
  if (finite) {
    const agent::PromWindow same = agent::ComputeWindow(s, s, 10);
    for (const auto& [key, rate] : same.counter_rates) {
      FUZZ_CHECK(rate == 0, "counter %s moved between identical scrapes", key.c_str());
    }
    for (const auto& [key, h] : same.histograms) {
      FUZZ_CHECK(h.count == 0, "histogram %s has %g observations between identical scrapes",
                 key.c_str(), h.count);
    }
  }
}

void CheckWindow(const agent::PromScrape& before, const agent::PromScrape& after) {
  const agent::PromWindow w = agent::ComputeWindow(before, after, 10);
  for (const auto& [key, h] : w.histograms) {
    if (std::isnan(h.p50) || std::isnan(h.p90) || std::isnan(h.p99)) continue;
    FUZZ_CHECK(h.p50 <= h.p90 && h.p90 <= h.p99, "%s: p50 %g p90 %g p99 %g", key.c_str(), h.p50,
               h.p90, h.p99);
  }
  const agent::AppMetricsSource source;
  const agent::AppSeriesChoice choice = agent::ChooseAppSeries(after, source);
  const agent::RequestWindow r = agent::ComputeRequestWindow(before, after, 10, choice, source);
  (void)r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t cut = data[0] % size;
  const absl::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);

  if (!in.empty() && in[0] == '{') {
    absl::StatusOr<agent::AppMetricsSource> src = agent::ParseAppMetricsSource(in);
    if (!src.ok()) {
      FUZZ_CHECK(src.status().code() == absl::StatusCode::kInvalidArgument, "%s",
                 src.status().ToString().c_str());
    } else {
      (void)agent::DescribeAppMetricsSource(*src);
    }
  }

  absl::StatusOr<agent::PromScrape> whole = agent::ParsePrometheusText(in);
  if (whole.ok()) CheckScrape(*whole);

  const absl::string_view first = in.substr(0, std::min(cut, in.size()));
  const absl::string_view second = in.substr(std::min(cut, in.size()));
  absl::StatusOr<agent::PromScrape> before = agent::ParsePrometheusText(first);
  absl::StatusOr<agent::PromScrape> after = agent::ParsePrometheusText(second);
  if (before.ok() && after.ok()) CheckWindow(*before, *after);
  return 0;
}
