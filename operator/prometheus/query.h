// PromQL queries of an analysis metric (issue #25, the Prometheus metric source), pure: the
// query a profile writes, with Booster's placeholders, turned into the one query for an arm
// and a window; and Prometheus's answer to an instant query (GET /api/v1/query) turned into
// the one number the judge takes, or a reason there is none. No I/O.
//
//   absl::Status ok = CheckQueryTemplate(text);           // at validation: placeholders known
//   absl::StatusOr<std::string> q = RenderQuery(text, {"shop", {"web-7d9-abc"}, absl::Seconds(30)});
//   QueryResult r = ParseQueryResponse(http_status, body);  // r.value, or r.outcome says why not
//
// Placeholders, each substituted inside a PromQL string literal or as a range:
//   {{namespace}}  the profile's namespace, escaped for a double-quoted string
//   {{pods}}       a regular expression matching exactly the arm's pods: their names with
//                  every regex metacharacter escaped, joined with |, escaped for the string
//   {{window}}     the analysis interval as a Prometheus duration (whole seconds, at least 1s)
// A query with any other {{...}} is refused. Not wired yet: no profile field reads it.
#ifndef BOOSTER_OPERATOR_PROMETHEUS_QUERY_H_
#define BOOSTER_OPERATOR_PROMETHEUS_QUERY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace booster::promql {

struct QueryContext {
  std::string namespace_;
  std::vector<std::string> pods;  // the arm's pods; none: nothing to ask (RenderQuery refuses)
  absl::Duration window = absl::Seconds(30);
};

// OK when every {{...}} in `query` is a known placeholder and the query is not empty.
absl::Status CheckQueryTemplate(absl::string_view query);

// The query for one arm and one window.
absl::StatusOr<std::string> RenderQuery(absl::string_view query, const QueryContext& context);

// Escapes for inside a PromQL double-quoted string literal: \ and " and control characters.
std::string EscapeStringLiteral(absl::string_view s);
// Escapes every RE2 metacharacter (Prometheus matchers are RE2, anchored at both ends).
std::string EscapeRegex(absl::string_view s);
// "30s", "90s": whole seconds, rounded up, at least 1s.
std::string FormatRange(absl::Duration d);

enum class QueryOutcome {
  kValue,     // one finite number
  kEmpty,     // the query matched no series: missing data, never a pass
  kMultiple,  // more than one series: the query must aggregate to one
  kNotFinite, // NaN or an infinity (a division by zero rate, say)
  kError,     // Prometheus refused the query or did not answer as its API does
};

struct QueryResult {
  QueryOutcome outcome = QueryOutcome::kError;
  double value = 0;
  // What to tell the user when outcome is not kValue: Prometheus's own error text, or what
  // the answer held instead of one number.
  std::string message;
};

// Prometheus's answer to an instant query: its HTTP status and body.
QueryResult ParseQueryResponse(int http_status, absl::string_view body);

absl::string_view QueryOutcomeName(QueryOutcome outcome);

}  // namespace booster::promql

#endif  // BOOSTER_OPERATOR_PROMETHEUS_QUERY_H_
