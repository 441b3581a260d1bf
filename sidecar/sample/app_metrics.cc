#include "sidecar/sample/app_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace booster::agent {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kHistogramNames[] = {"http_request_duration_seconds",
                                                 "http_server_request_duration_seconds",
                                                 "http_server_requests_seconds"};
constexpr absl::string_view kCounterNames[] = {"http_requests_total", "http_server_requests_total"};

// Outgoing calls (http_client_request_duration_seconds, ...) are not the app's requests.
bool HasClientPart(absl::string_view name) {
  for (absl::string_view part : absl::StrSplit(name, '_')) {
    if (part == "client") return true;
  }
  return false;
}

// Lower is better; -1: not a candidate.
int HistogramRank(absl::string_view name) {
  if (HasClientPart(name)) return -1;
  for (absl::string_view n : kHistogramNames) {
    if (name == n) return 0;
  }
  if (absl::EndsWith(name, "_request_duration_seconds")) return 1;
  if (absl::EndsWith(name, "_latency_seconds")) return 2;
  return -1;
}

int CounterRank(absl::string_view name) {
  // promhttp counts the scrapes of /metrics itself, not the application's requests.
  if (HasClientPart(name) || absl::StrContains(name, "metric_handler")) return -1;
  for (absl::string_view n : kCounterNames) {
    if (name == n) return 0;
  }
  if (absl::EndsWith(name, "_requests_total")) return 1;
  return -1;
}

double UnitScale(absl::string_view name) {
  if (absl::EndsWith(name, "_milliseconds") || absl::EndsWith(name, "_ms")) return 1e-3;
  if (absl::EndsWith(name, "_microseconds") || absl::EndsWith(name, "_us")) return 1e-6;
  return 1;
}

bool HasLabel(const PromLabels& labels, absl::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return true;
  }
  return false;
}

const std::string* LabelValue(const PromLabels& labels, absl::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return &v;
  }
  return nullptr;
}

PromLabels WithoutLe(const PromLabels& labels, std::string* le) {
  PromLabels out;
  for (const auto& [k, v] : labels) {
    if (k == "le") {
      *le = v;
    } else {
      out.emplace_back(k, v);
    }
  }
  return out;
}

bool ParseBound(const std::string& s, double* out) {
  if (s == "+Inf" || s == "Inf" || s == "inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(s, out);
}

// Histogram families of a scrape with their observation totals: typed ones, and untyped
// `_bucket` series with `le` (text written by hand, without # TYPE lines).
std::map<std::string, double> Histograms(const PromScrape& s) {
  std::map<std::string, double> out;
  for (const auto& [family, type] : s.types) {
    if (type == "histogram") out[family];
  }
  for (const PromSample& x : s.samples) {
    if (!absl::EndsWith(x.name, "_bucket") || !HasLabel(x.labels, "le")) continue;
    std::string family = FamilyOf(x.name, s.types);
    if (family == x.name) {
      if (s.types.count(family) > 0) continue;  // a typed family that happens to end so
      family = x.name.substr(0, x.name.size() - 7);
    }
    auto it = s.types.find(family);
    if (it != s.types.end() && it->second != "histogram") continue;
    std::string le;
    WithoutLe(x.labels, &le);
    out[family] += (le == "+Inf" && std::isfinite(x.value)) ? x.value : 0;
  }
  return out;
}

// Counter sample names with their totals: samples of a typed counter family, and untyped
// samples named *_total.
std::map<std::string, double> Counters(const PromScrape& s) {
  std::map<std::string, double> out;
  for (const PromSample& x : s.samples) {
    std::string type = TypeOf(x.name, s.types);
    bool counter = type == "counter" || (type == "untyped" && absl::EndsWith(x.name, "_total"));
    if (counter) out[x.name] += std::isfinite(x.value) ? x.value : 0;
  }
  return out;
}

// "http_request" for http_request_duration_seconds: a counter whose name starts with the
// histogram's stem (http_requests_total) counts the same requests.
std::string Stem(absl::string_view histogram) {
  for (absl::string_view suffix : {"_duration_seconds", "_latency_seconds", "_seconds"}) {
    if (absl::EndsWith(histogram, suffix)) {
      return std::string(histogram.substr(0, histogram.size() - suffix.size()));
    }
  }
  return std::string(histogram);
}

// The best-ranked candidate: first those starting with `stem` (when given), then by rank,
// then by more observations, then by name.
template <typename Rank>
std::string Best(const std::map<std::string, double>& candidates, Rank rank,
                 const std::string& stem = "") {
  std::string best;
  std::tuple<bool, int, double> best_key;
  for (const auto& [name, total] : candidates) {
    int r = rank(name);
    if (r < 0) continue;
    bool unrelated = stem.empty() || !absl::StartsWith(name, stem);
    std::tuple<bool, int, double> key{unrelated, r, -total};
    if (best.empty() || key < best_key) {
      best = name;
      best_key = key;
    }
  }
  return best;
}

double Delta(double before, double after) { return after >= before ? after - before : after; }

// One label set of a family and its increase over the window.
struct SeriesDelta {
  PromLabels labels;
  double delta = 0;
};

// Errors of one family, when one of its series carries an error label.
bool CountErrors(const std::vector<SeriesDelta>& series, const std::string& family,
                 const AppMetricsSource& source, RequestWindow* w) {
  std::vector<std::string> labels;
  if (!source.error_label.empty()) {
    labels.push_back(source.error_label);
  } else {
    for (absl::string_view l : kDefaultErrorLabels) labels.emplace_back(l);
  }
  for (const std::string& label : labels) {
    bool present = false;
    for (const SeriesDelta& s : series) present |= HasLabel(s.labels, label);
    if (!present) continue;
    std::regex re;
    try {
      re = std::regex(source.error_match, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      w->notes.push_back(absl::StrCat("errorMatch \"", source.error_match, "\" is not valid"));
      return false;
    }
    double errors = 0, base = 0;
    for (const SeriesDelta& s : series) {
      base += s.delta;
      const std::string* v = LabelValue(s.labels, label);
      if (v != nullptr && std::regex_match(*v, re)) errors += s.delta;
    }
    w->errors = errors;
    w->error_base = base;
    w->error_source = absl::StrCat(family, "{", label, "=~\"", source.error_match, "\"}");
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<AppMetricsSource> ParseAppMetricsSource(absl::string_view text) {
  AppMetricsSource src;
  if (absl::StripAsciiWhitespace(text).empty()) return src;
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a JSON object: ", text, " (expected e.g. {\"port\": 8080, \"path\": \"/metrics\"})"));
  }
  auto string_field = [&](const char* key, std::string* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return absl::OkStatus();
    if (!it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" must be a string"));
    }
    std::string v = it->get<std::string>();
    if (!v.empty()) *out = v;
    return absl::OkStatus();
  };
  for (auto [key, out] :
       {std::pair{"path", &src.path}, std::pair{"latencyHistogram", &src.latency_histogram},
        std::pair{"requestCounter", &src.request_counter},
        std::pair{"errorLabel", &src.error_label}, std::pair{"errorMatch", &src.error_match}}) {
    if (absl::Status s = string_field(key, out); !s.ok()) return s;
  }
  if (auto it = j.find("port"); it != j.end() && !it->is_null()) {
    int64_t port = 0;
    bool ok = false;
    if (it->is_number_integer()) {
      port = it->get<int64_t>();
      ok = true;
    } else if (it->is_string()) {
      ok = absl::SimpleAtoi(it->get<std::string>(), &port);
    }
    if (!ok || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"port\" must be a number in 1..65535, got ", it->dump()));
    }
    src.port = static_cast<int>(port);
  }
  if (src.path.empty() || src.path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("\"path\" must start with '/', got \"", src.path, "\""));
  }
  try {
    std::regex re(src.error_match, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"errorMatch\" is not a regular expression: \"", src.error_match, "\""));
  }
  if (absl::EndsWith(src.latency_histogram, "_bucket")) {
    src.latency_histogram.resize(src.latency_histogram.size() - 7);
  }
  return src;
}

std::string DescribeAppMetricsSource(const AppMetricsSource& s) {
  auto or_auto = [](const std::string& v) { return v.empty() ? std::string("auto") : v; };
  std::string where = !s.url.empty() ? s.url
                      : s.port == 0  ? absl::StrCat("port=auto path=", s.path)
                                     : absl::StrCat("port=", s.port, " path=", s.path);
  return absl::StrCat(where, " latencyHistogram=", or_auto(s.latency_histogram),
                      " requestCounter=", or_auto(s.request_counter),
                      " errorLabel=", or_auto(s.error_label), " errorMatch=", s.error_match);
}

AppSeriesChoice ChooseAppSeries(const PromScrape& scrape, const AppMetricsSource& source) {
  AppSeriesChoice c;
  std::map<std::string, double> histograms = Histograms(scrape);
  std::map<std::string, double> counters = Counters(scrape);
  std::vector<std::string> notes;
  if (!source.latency_histogram.empty()) {
    if (histograms.count(source.latency_histogram) > 0) {
      c.histogram = source.latency_histogram;
    } else {
      notes.push_back(
          absl::StrCat("latency histogram ", source.latency_histogram, " is not in the scrape"));
    }
  } else {
    c.histogram = Best(histograms, HistogramRank);
    if (c.histogram.empty()) {
      notes.push_back(
          "no request latency histogram (http_request_duration_seconds, "
          "*_request_duration_seconds, *_latency_seconds) in the scrape");
    }
  }
  c.histogram_scale = UnitScale(c.histogram);
  if (!source.request_counter.empty()) {
    std::string with_total = source.request_counter + "_total";
    if (counters.count(source.request_counter) > 0) {
      c.counter = source.request_counter;
    } else if (counters.count(with_total) > 0) {
      c.counter = with_total;
    } else {
      notes.push_back(
          absl::StrCat("request counter ", source.request_counter, " is not in the scrape"));
    }
  } else {
    c.counter = Best(counters, CounterRank, c.histogram.empty() ? "" : Stem(c.histogram));
  }
  c.note = absl::StrJoin(notes, "; ");
  return c;
}

AppSeriesChoice KeepOrChooseAppSeries(const AppSeriesChoice& previous, const PromScrape& scrape,
                                      const AppMetricsSource& source) {
  AppSeriesChoice c = ChooseAppSeries(scrape, source);
  if (!previous.histogram.empty() && Histograms(scrape).count(previous.histogram) > 0) {
    c.histogram = previous.histogram;
    c.histogram_scale = previous.histogram_scale;
  }
  if (!previous.counter.empty() && Counters(scrape).count(previous.counter) > 0) {
    c.counter = previous.counter;
  }
  return c;
}

RequestWindow ComputeRequestWindow(const PromScrape& before, const PromScrape& after,
                                   double seconds, const AppSeriesChoice& choice,
                                   const AppMetricsSource& source) {
  RequestWindow w;
  w.seconds = seconds;
  if (!choice.note.empty()) w.notes.push_back(choice.note);
  std::map<std::string, double> old;
  for (const PromSample& s : before.samples) old[SeriesKey(s.name, s.labels)] = s.value;

  // --- the counter ---
  std::vector<SeriesDelta> counter_series;
  if (!choice.counter.empty()) {
    for (const PromSample& s : after.samples) {
      if (s.name != choice.counter || !std::isfinite(s.value)) continue;
      auto it = old.find(SeriesKey(s.name, s.labels));
      counter_series.push_back({s.labels, Delta(it == old.end() ? 0 : it->second, s.value)});
    }
  }

  // --- the histogram: per label set (without le) its buckets after and before ---
  std::vector<SeriesDelta> histogram_series;  // +Inf increase per label set
  if (!choice.histogram.empty()) {
    struct Buckets {
      std::vector<std::pair<double, double>> after;  // (bound, value)
      std::vector<double> before;                    // same order; NaN when absent
      bool reset = false;
    };
    std::map<std::string, std::pair<PromLabels, Buckets>> series;
    const std::string bucket_name = choice.histogram + "_bucket";
    for (const PromSample& s : after.samples) {
      if (s.name != bucket_name || !std::isfinite(s.value)) continue;
      std::string le;
      PromLabels rest = WithoutLe(s.labels, &le);
      double bound = 0;
      if (!ParseBound(le, &bound)) continue;
      auto& [labels, b] = series[SeriesKey(choice.histogram, rest)];
      labels = rest;
      auto it = old.find(SeriesKey(s.name, s.labels));
      double prev = it == old.end() ? 0 : it->second;
      b.after.emplace_back(bound, s.value);
      b.before.push_back(prev);
      if (s.value < prev) b.reset = true;  // the process restarted: count from zero
    }
    // Sum per bound over the label sets; keep only bounds every set has (sets with
    // different layouts cannot be added bucket by bucket).
    std::map<double, std::pair<double, size_t>> sum;  // bound -> (increase, sets)
    for (auto& [key, entry] : series) {
      auto& [labels, b] = entry;
      double inf_delta = -1;
      for (size_t i = 0; i < b.after.size(); ++i) {
        double d = b.reset ? b.after[i].second : b.after[i].second - b.before[i];
        auto& slot = sum[b.after[i].first];
        slot.first += d;
        slot.second += 1;
        if (std::isinf(b.after[i].first)) inf_delta = d;
      }
      if (inf_delta >= 0) histogram_series.push_back({labels, inf_delta});
    }
    double running = 0;
    for (const auto& [bound, entry] : sum) {
      if (entry.second != series.size()) continue;
      running = std::max(running, entry.first);  // cumulative counts never go down
      double b = std::isinf(bound) ? bound : bound * choice.histogram_scale;
      w.latency_buckets.emplace_back(b, running);
    }
    if (w.latency_buckets.empty() || !std::isinf(w.latency_buckets.back().first)) {
      if (!series.empty()) {
        w.notes.push_back(
            absl::StrCat(choice.histogram, " has no +Inf bucket common to its series"));
      }
      w.latency_buckets.clear();
    } else {
      w.histogram = choice.histogram;
      w.latency_count = w.latency_buckets.back().second;
    }
  }

  // --- requests: the counter, else the histogram's count ---
  if (!counter_series.empty()) {
    w.request_source = choice.counter;
    for (const SeriesDelta& s : counter_series) w.requests += s.delta;
  } else if (!w.histogram.empty()) {
    w.request_source = w.histogram + "_count";
    w.requests = w.latency_count;
  } else {
    w.notes.push_back("no request counter or histogram: requests unknown");
  }

  // --- errors: the counter's error label, else the histogram's ---
  bool errors =
      (!counter_series.empty() && CountErrors(counter_series, choice.counter, source, &w)) ||
      (!w.histogram.empty() && CountErrors(histogram_series, w.histogram + "_count", source, &w));
  if (!errors && !w.request_source.empty()) {
    w.notes.push_back(absl::StrCat(
        "no error label (",
        source.error_label.empty() ? absl::StrJoin(kDefaultErrorLabels, ", ") : source.error_label,
        ") on the request series"));
  }
  return w;
}

GoRuntimeWindow ComputeGoRuntimeWindow(const PromScrape& before, const PromScrape& after,
                                       double seconds) {
  GoRuntimeWindow w;
  w.seconds = seconds;
  w.gc_cpu_seconds = CounterIncrease(before, after, kGoGcCpuSecondsCounter);
  w.heap_bytes = SumOfSamples(after, kGoHeapBytesGauge);
  return w;
}

}  // namespace booster::agent
