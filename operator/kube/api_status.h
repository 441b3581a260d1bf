// Maps API-server answers to absl::Status codes chosen by what the caller should do:
// 404 -> kNotFound, 409 -> kAborted (re-read and retry), 410 -> kOutOfRange ("Expired":
// relist), 422/400 -> kInvalidArgument with the server's message, 429 and 5xx ->
// kUnavailable (retry; 429 carries the server's Retry-After), 401/403 ->
// kUnauthenticated/kPermissionDenied.
//
//   absl::Status s = StatusFromHttp(409, body, "");
//   if (IsConflict(s)) { /* re-read, retry */ }
#ifndef BOOSTER_OPERATOR_KUBE_API_STATUS_H_
#define BOOSTER_OPERATOR_KUBE_API_STATUS_H_

#include <optional>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace booster::kube {

// The code used for 410 Gone ("resourceVersion too old"): the caller must relist.
inline constexpr absl::StatusCode kExpiredCode = absl::StatusCode::kOutOfRange;

// Builds the status for an HTTP answer. `body` may be a metav1.Status JSON object, whose
// `message` is carried over; `retry_after` is the raw Retry-After header ("" if absent).
// 2xx returns OkStatus.
absl::Status StatusFromHttp(int http_code, absl::string_view body, absl::string_view retry_after);

// Builds the status for a metav1.Status object seen inside a watch stream (ERROR event).
absl::Status StatusFromApiStatus(int http_code, absl::string_view reason, absl::string_view message);

// The delay the server asked for (Retry-After), if any.
std::optional<absl::Duration> RetryAfter(const absl::Status& s);

// The HTTP code the status was built from, or 0.
int HttpCode(const absl::Status& s);

inline bool IsConflict(const absl::Status& s) { return absl::IsAborted(s); }
inline bool IsExpired(const absl::Status& s) { return s.code() == kExpiredCode; }


}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_API_STATUS_H_
