#include "sidecar/feedback/client/feedback_types.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace booster::agent {
namespace {

// Whether `t` fits WindowReport's int64 Unix nanoseconds (1677-09-21 .. 2262-04-11).
bool FitsUnixNanos(absl::Time t) {
  return t >= absl::FromUnixNanos(std::numeric_limits<int64_t>::min()) &&
         t <= absl::FromUnixNanos(std::numeric_limits<int64_t>::max());
}

}  // namespace

absl::Status ValidateFeedbackWindow(const FeedbackWindow& window) {
  if (!FitsUnixNanos(window.start) || !FitsUnixNanos(window.end)) {
    return absl::InvalidArgumentError(absl::StrCat("window [", absl::FormatTime(window.start), ", ",
                                                   absl::FormatTime(window.end),
                                                   "] is not a representable time range"));
  }
  if (window.end <= window.start) {
    return absl::InvalidArgumentError(absl::StrCat("window ends (", absl::FormatTime(window.end),
                                                   ") at or before its start (",
                                                   absl::FormatTime(window.start), ")"));
  }
  for (const auto& [name, metric] : window.metrics) {
    if (name.empty()) return absl::InvalidArgumentError("a metric has an empty name");
    if (!std::isfinite(metric.value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", name, " is not finite (", metric.value,
                       "); leave a metric the agent could not measure out"));
    }
    if (metric.samples < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", name, " has a negative sample count (", metric.samples, ")"));
    }
  }
  auto printable = [](const std::string& s, size_t max) {
    return s.size() <= max &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  };
  if (!printable(window.go_version, 128)) {
    return absl::InvalidArgumentError(
        "the Go version is not at most 128 printable ASCII characters");
  }
  if (!printable(window.go_default_godebug, 4096)) {
    return absl::InvalidArgumentError(
        "the default GODEBUG is not at most 4096 printable ASCII characters");
  }
  if (window.app_cpus < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("app_cpus is negative (", window.app_cpus, "); 0 means unknown"));
  }
  if (!window.latency_buckets.empty()) {
    if (std::string why = CheckBuckets(window.latency_buckets); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("the latency histogram is malformed: ", why));
    }
  }
  return absl::OkStatus();
}

}  // namespace booster::agent
