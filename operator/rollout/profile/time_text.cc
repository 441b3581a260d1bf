// Go durations and RFC 3339 times as text (time_text.h).
#include "operator/rollout/profile/time_text.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace booster::rollout {

absl::StatusOr<absl::Duration> ParseGoDuration(absl::string_view text) {
  // The CRD's pattern: ([0-9]+(\.[0-9]+)?(ms|s|m|h))+
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration; write e.g. 30s, 2m, 1h30m or 500ms"));
  };
  if (text.empty()) return bad();
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    if (i == start) return bad();
    if (i < text.size() && text[i] == '.') {
      ++i;
      size_t frac = i;
      while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
      if (i == frac) return bad();
    }
    if (text.substr(i, 2) == "ms") {
      i += 2;
    } else if (i < text.size() && (text[i] == 's' || text[i] == 'm' || text[i] == 'h')) {
      ++i;
    } else {
      return bad();
    }
  }
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return bad();
  }
  return d;
}

std::string FormatGoDuration(absl::Duration d) { return absl::FormatDuration(d); }

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Time ParseTimeOr(absl::string_view text, absl::Time fallback) {
  if (text.empty()) return fallback;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return fallback;
  return t;
}

}  // namespace booster::rollout
