// PromQL templating and instant-query answers (query.h).
#include "operator/prometheus/query.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace booster::promql {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kKnown = "{{namespace}}, {{pods}}, {{window}}";

// Calls `on_text` for the text between placeholders and `on_name` for each placeholder's
// trimmed name; an error for an unclosed {{.
template <typename Text, typename Name>
absl::Status Walk(absl::string_view query, Text on_text, Name on_name) {
  size_t at = 0;
  while (at < query.size()) {
    const size_t open = query.find("{{", at);
    if (open == absl::string_view::npos) {
      on_text(query.substr(at));
      break;
    }
    on_text(query.substr(at, open - at));
    const size_t close = query.find("}}", open + 2);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("an unclosed {{ at offset ", open, ": placeholders are ", kKnown));
    }
    if (absl::Status s = on_name(absl::StripAsciiWhitespace(query.substr(open + 2, close - open - 2)));
        !s.ok()) {
      return s;
    }
    at = close + 2;
  }
  return absl::OkStatus();
}

absl::Status Known(absl::string_view name) {
  if (name == "namespace" || name == "pods" || name == "window") return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placeholder {{", name, "}}: Booster fills in ", kKnown));
}

std::string Shorten(absl::string_view s, size_t n = 300) {
  return s.size() <= n ? std::string(s) : absl::StrCat(s.substr(0, n), "...");
}

// Prometheus writes sample values as strings: "1.5", "NaN", "+Inf", "-Inf".
QueryResult Sample(const Json& pair) {
  QueryResult r;
  if (!pair.is_array() || pair.size() != 2 || !pair[1].is_string()) {
    r.message = absl::StrCat("a sample that is not [time, \"value\"]: ", Shorten(pair.dump()));
    return r;
  }
  const std::string text = pair[1].get<std::string>();
  double v = 0;
  if (text == "NaN" || text == "+Inf" || text == "-Inf" || text == "Inf") {
    r.outcome = QueryOutcome::kNotFinite;
    r.message = absl::StrCat("the query's value is ", text);
    return r;
  }
  if (!absl::SimpleAtod(text, &v)) {
    r.message = absl::StrCat("a sample value that is not a number: ", Shorten(text));
    return r;
  }
  if (!std::isfinite(v)) {
    r.outcome = QueryOutcome::kNotFinite;
    r.message = absl::StrCat("the query's value is ", text);
    return r;
  }
  r.outcome = QueryOutcome::kValue;
  r.value = v;
  return r;
}

}  // namespace

absl::Status CheckQueryTemplate(absl::string_view query) {
  if (absl::StripAsciiWhitespace(query).empty()) {
    return absl::InvalidArgumentError("the query is empty");
  }
  return Walk(query, [](absl::string_view) {}, Known);
}

std::string EscapeStringLiteral(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string EscapeRegex(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (absl::string_view("\\.+*?()|[]{}^$").find(c) != absl::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string FormatRange(absl::Duration d) {
  const int64_t ms = absl::ToInt64Milliseconds(d);
  const int64_t seconds = ms <= 1000 ? 1 : (ms + 999) / 1000;
  return absl::StrCat(seconds, "s");
}

absl::StatusOr<std::string> RenderQuery(absl::string_view query, const QueryContext& context) {
  if (absl::Status s = CheckQueryTemplate(query); !s.ok()) return s;
  std::string out;
  absl::Status s = Walk(
      query, [&](absl::string_view text) { absl::StrAppend(&out, text); },
      [&](absl::string_view name) -> absl::Status {
        if (name == "namespace") {
          absl::StrAppend(&out, EscapeStringLiteral(context.namespace_));
        } else if (name == "window") {
          absl::StrAppend(&out, FormatRange(context.window));
        } else {  // pods
          if (context.pods.empty()) {
            return absl::FailedPreconditionError("the arm has no pods to ask about");
          }
          std::vector<std::string> names;
          names.reserve(context.pods.size());
          for (const std::string& p : context.pods) names.push_back(EscapeRegex(p));
          absl::StrAppend(&out, EscapeStringLiteral(absl::StrJoin(names, "|")));
        }
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

QueryResult ParseQueryResponse(int http_status, absl::string_view body) {
  QueryResult r;
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    r.message = absl::StrCat("HTTP ", http_status, ", not Prometheus's JSON: ", Shorten(body));
    return r;
  }
  if (j.value("status", "") != "success") {
    r.message = absl::StrCat(j.value("errorType", "error"), ": ", j.value("error", Shorten(body)));
    if (http_status != 200 && http_status != 0) r.message += absl::StrCat(" (HTTP ", http_status, ")");
    return r;
  }
  const Json* data = j.contains("data") ? &j["data"] : nullptr;
  if (data == nullptr || !data->is_object()) {
    r.message = "an answer without data";
    return r;
  }
  const std::string type = data->value("resultType", "");
  const Json result = data->value("result", Json());
  if (type == "scalar") return Sample(result);
  if (type != "vector") {
    r.message = absl::StrCat("a result of type ", type.empty() ? "(none)" : type,
                             type == "matrix"
                                 ? ": a range vector; end the query in one value per instant "
                                   "(e.g. rate(...[{{window}}]) or avg_over_time(...))"
                                 : ": the query must give one number");
    return r;
  }
  if (!result.is_array()) {
    r.message = "a vector result that is not a list";
    return r;
  }
  if (result.empty()) {
    r.outcome = QueryOutcome::kEmpty;
    r.message = "the query matched no series";
    return r;
  }
  if (result.size() > 1) {
    std::vector<std::string> series;
    for (size_t i = 0; i < result.size() && i < 3; ++i) {
      series.push_back(result[i].value("metric", Json::object()).dump());
    }
    r.outcome = QueryOutcome::kMultiple;
    r.message = absl::StrCat("the query returned ", result.size(), " series (",
                             absl::StrJoin(series, ", "), result.size() > 3 ? ", ..." : "",
                             "); aggregate it to one, e.g. sum(...) or max(...)");
    return r;
  }
  return Sample(result[0].value("value", Json()));
}

absl::string_view QueryOutcomeName(QueryOutcome outcome) {
  switch (outcome) {
    case QueryOutcome::kValue: return "Value";
    case QueryOutcome::kEmpty: return "Empty";
    case QueryOutcome::kMultiple: return "Multiple";
    case QueryOutcome::kNotFinite: return "NotFinite";
    case QueryOutcome::kError: return "Error";
  }
  return "Error";
}

}  // namespace booster::promql
