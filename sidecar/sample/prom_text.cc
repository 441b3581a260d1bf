#include "sidecar/sample/prom_text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace booster::agent {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool ParseValue(absl::string_view s, double* out) {
  if (s == "+Inf" || s == "Inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "NaN") {
    *out = kNaN;
    return true;
  }
  return absl::SimpleAtod(s, out);
}

bool IsNameChar(char c, bool first) {
  return absl::ascii_isalpha(c) || c == '_' || c == ':' || (!first && absl::ascii_isdigit(c));
}

absl::Status ParseLine(absl::string_view line, PromSample* out) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return absl::InvalidArgumentError(absl::StrCat("no metric name: ", line));
  out->name = std::string(line.substr(0, i));
  out->labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start)) ++i;
      if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
        return absl::InvalidArgumentError(absl::StrCat("bad label in: ", line));
      }
      std::string label(line.substr(start, i - start));
      i += 2;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '\\' && i < line.size()) {
          char e = line[i++];
          value += e == 'n' ? '\n' : e;
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) return absl::InvalidArgumentError(absl::StrCat("unterminated label: ", line));
      out->labels.emplace_back(std::move(label), std::move(value));
    }
  }
  std::vector<absl::string_view> rest =
      absl::StrSplit(line.substr(i), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (rest.empty() || rest.size() > 2 || !ParseValue(rest[0], &out->value)) {
    return absl::InvalidArgumentError(absl::StrCat("bad sample value: ", line));
  }
  std::sort(out->labels.begin(), out->labels.end());
  return absl::OkStatus();
}

double CounterDelta(double before, double after) {
  // A counter that went down was reset: count from zero, as rate() does.
  return after >= before ? after - before : after;
}

PromLabels Without(const PromLabels& labels, absl::string_view name, std::string* removed) {
  PromLabels out;
  for (const auto& [k, v] : labels) {
    if (k == name) {
      *removed = v;
    } else {
      out.emplace_back(k, v);
    }
  }
  return out;
}

}  // namespace

std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.count(name) > 0) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count", "_total"}) {
    if (absl::EndsWith(name, suffix)) {
      std::string base = name.substr(0, name.size() - std::string(suffix).size());
      auto it = types.find(base);
      if (it == types.end()) continue;
      bool grouped = it->second == "histogram" || it->second == "summary";
      if ((grouped && suffix[1] != 't') || (it->second == "counter" && suffix[1] == 't')) {
        return base;
      }
    }
  }
  return name;
}

std::string TypeOf(const std::string& name, const std::map<std::string, std::string>& types) {
  auto it = types.find(FamilyOf(name, types));
  return it == types.end() ? "untyped" : it->second;
}

std::string SeriesKey(absl::string_view name, const PromLabels& labels) {
  std::string out(name);
  if (labels.empty()) return out;
  out += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    // Escaped as in the exposition format, so that distinct label sets never share a key
    // (a value holding `",b="` would otherwise read as two labels).
    absl::StrAppend(&out, i == 0 ? "" : ",", labels[i].first, "=\"");
    for (char c : labels[i].second) {
      if (c == '\\' || c == '"') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::optional<double> SumOfSamples(const PromScrape& scrape, absl::string_view name) {
  std::optional<double> sum;
  for (const PromSample& s : scrape.samples) {
    if (s.name != name || !std::isfinite(s.value)) continue;
    sum = sum.value_or(0) + s.value;
  }
  return sum;
}

std::optional<double> CounterIncrease(const PromScrape& before, const PromScrape& after,
                                      absl::string_view name) {
  std::map<std::string, double> old;
  for (const PromSample& s : before.samples) {
    if (s.name == name && std::isfinite(s.value)) old[SeriesKey(s.name, s.labels)] = s.value;
  }
  std::optional<double> increase;
  for (const PromSample& s : after.samples) {
    if (s.name != name || !std::isfinite(s.value)) continue;
    auto it = old.find(SeriesKey(s.name, s.labels));
    double d = CounterDelta(it == old.end() ? 0 : it->second, s.value);
    increase = increase.value_or(0) + std::max(0.0, d);
  }
  return increase;
}

absl::StatusOr<PromScrape> ParsePrometheusText(absl::string_view text) {
  PromScrape s;
  std::set<std::string> seen;  // SeriesKey of every sample kept
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (f.size() >= 4 && f[1] == "TYPE") s.types[std::string(f[2])] = std::string(f[3]);
      continue;
    }
    PromSample sample;
    if (absl::Status st = ParseLine(line, &sample); !st.ok()) return st;
    // A series given twice (a buggy exporter) keeps its first sample, as Prometheus
    // does: a later one would read as a counter reset and invent observations.
    if (!seen.insert(SeriesKey(sample.name, sample.labels)).second) continue;
    s.samples.push_back(std::move(sample));
  }
  return s;
}

PromWindow ComputeWindow(const PromScrape& before, const PromScrape& after, double seconds) {
  PromWindow w;
  if (!(seconds > 0)) return w;
  std::map<std::string, double> old;
  for (const PromSample& s : before.samples) old[SeriesKey(s.name, s.labels)] = s.value;
  auto delta_of = [&](const PromSample& s) {
    auto it = old.find(SeriesKey(s.name, s.labels));
    return CounterDelta(it == old.end() ? 0 : it->second, s.value);
  };

  // Histograms: series without `le` -> (le, delta) buckets; summaries: sum/count deltas.
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;
  std::map<std::string, std::pair<double, double>> sums_counts;  // key -> (dsum, dcount)
  for (const PromSample& s : after.samples) {
    std::string base = FamilyOf(s.name, after.types);
    std::string type = TypeOf(s.name, after.types);
    if (type == "counter") {
      w.counter_rates[SeriesKey(s.name, s.labels)] = delta_of(s) / seconds;
    } else if (type == "histogram" || type == "summary") {
      if (s.name == base + "_bucket") {
        std::string le;
        PromLabels rest = Without(s.labels, "le", &le);
        double bound = 0;
        if (ParseValue(le, &bound)) buckets[SeriesKey(base, rest)].emplace_back(bound, delta_of(s));
      } else if (s.name == base + "_sum") {
        sums_counts[SeriesKey(base, s.labels)].first = delta_of(s);
      } else if (s.name == base + "_count") {
        sums_counts[SeriesKey(base, s.labels)].second = delta_of(s);
      } else if (type == "summary") {
        std::string q;
        PromLabels rest = Without(s.labels, "quantile", &q);
        if (!q.empty()) w.summaries[SeriesKey(base, rest)].quantiles[q] = s.value;
      }
      if (type == "summary" && s.name != base) {
        // ensure the entry exists even before quantiles are seen
        std::string q;
        w.summaries[SeriesKey(base, Without(s.labels, "quantile", &q))];
      }
    }
  }
  for (auto& [key, b] : buckets) {
    std::sort(b.begin(), b.end());
    HistogramWindow h;
    h.count = b.empty() ? 0 : b.back().second;
    h.rate = h.count / seconds;
    h.p50 = BucketQuantile(0.5, b);
    h.p90 = BucketQuantile(0.9, b);
    h.p99 = BucketQuantile(0.99, b);
    auto sc = sums_counts.find(key);
    h.mean = (sc != sums_counts.end() && sc->second.second > 0)
                 ? sc->second.first / sc->second.second
                 : kNaN;
    w.histograms[key] = h;
  }
  for (auto& [key, s] : w.summaries) {
    auto sc = sums_counts.find(key);
    if (sc != sums_counts.end()) {
      s.count = sc->second.second;
      s.rate = s.count / seconds;
      s.mean = s.count > 0 ? sc->second.first / s.count : kNaN;
    } else {
      s.mean = kNaN;
    }
  }
  return w;
}

}  // namespace booster::agent
