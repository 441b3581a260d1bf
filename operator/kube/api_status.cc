#include "operator/kube/api_status.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/cord.h"
#include "operator/kube/json.h"

namespace booster::kube {
namespace {

constexpr char kRetryAfterUrl[] = "booster.dev/kube/retry-after-seconds";
constexpr char kHttpCodeUrl[] = "booster.dev/kube/http-code";

absl::StatusCode CodeFor(int http_code, absl::string_view reason) {
  switch (http_code) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      // POST of an existing name is 409 with reason AlreadyExists; everything else (a stale
      // resourceVersion) is a conflict.
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return kExpiredCode;
    case 415:
      return absl::StatusCode::kInvalidArgument;
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 429:
      return absl::StatusCode::kUnavailable;
    default:
      break;
  }
  if (http_code >= 500) return absl::StatusCode::kUnavailable;
  if (http_code >= 400) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kUnknown;
}

}  // namespace

absl::Status StatusFromApiStatus(int http_code, absl::string_view reason, absl::string_view message) {
  if (http_code >= 200 && http_code < 300) return absl::OkStatus();
  std::string text = absl::StrCat("HTTP ", http_code);
  if (!reason.empty()) absl::StrAppend(&text, " ", reason);
  if (!message.empty()) absl::StrAppend(&text, ": ", message);
  absl::Status s(CodeFor(http_code, reason), text);
  s.SetPayload(kHttpCodeUrl, absl::Cord(absl::StrCat(http_code)));
  return s;
}

absl::Status StatusFromHttp(int http_code, absl::string_view body, absl::string_view retry_after) {
  if (http_code >= 200 && http_code < 300) return absl::OkStatus();
  std::string reason;
  std::string message;
  absl::StatusOr<Json> j = ParseJson(body);
  if (j.ok() && j->is_object() && JsonString(*j, "/kind") == "Status") {
    reason = JsonString(*j, "/reason");
    message = JsonString(*j, "/message");
  } else {
    message = std::string(body.substr(0, 512));
  }
  absl::Status s = StatusFromApiStatus(http_code, reason, message);
  int seconds = 0;
  if (!retry_after.empty() &&
      absl::SimpleAtoi(absl::StripAsciiWhitespace(retry_after), &seconds) && seconds >= 0) {
    s.SetPayload(kRetryAfterUrl, absl::Cord(absl::StrCat(seconds)));
  }
  return s;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& s) {
  auto p = s.GetPayload(kRetryAfterUrl);
  int seconds = 0;
  if (!p || !absl::SimpleAtoi(std::string(*p), &seconds)) return std::nullopt;
  return absl::Seconds(seconds);
}

int HttpCode(const absl::Status& s) {
  auto p = s.GetPayload(kHttpCodeUrl);
  int code = 0;
  if (!p || !absl::SimpleAtoi(std::string(*p), &code)) return 0;
  return code;
}

}  // namespace booster::kube
