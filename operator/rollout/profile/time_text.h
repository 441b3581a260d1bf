// Durations and times as text, the way the BoosterProfile CRD and the API server write
// them: Go-style durations ("90s", "2m", "1h30m", "1.5s", "250ms") and RFC 3339 times.
// Includes only Abseil.
//
//   absl::StatusOr<absl::Duration> d = ParseGoDuration("1h30m");   // 90 minutes
//   j["stepStartTime"] = FormatRfc3339(now);                          // "2023-11-14T22:15:00Z"
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_TIME_TEXT_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_TIME_TEXT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace booster::rollout {

// Go-style durations as the CRD accepts them ("90s", "2m", "1h30m", "1.5s", "250ms").
absl::StatusOr<absl::Duration> ParseGoDuration(absl::string_view text);
// "2m0s" style is not needed: the shortest exact form ("2m", "90s", "1h30m", "250ms").
std::string FormatGoDuration(absl::Duration d);

// RFC 3339 times as the API server writes them.
std::string FormatRfc3339(absl::Time t);
absl::Time ParseTimeOr(absl::string_view text, absl::Time fallback);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_TIME_TEXT_H_
