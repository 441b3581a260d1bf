// A minimal HTTP/1.0 GET for scraping an application's /metrics inside the pod (plain
// http on the pod's own address; no TLS, no redirects, no chunked encoding: HTTP/1.0
// responses end at connection close). Kept tiny so the agent stays small.
//
//   absl::StatusOr<std::string> body = HttpGet("http://127.0.0.1:8080/metrics",
//                                              absl::Seconds(2));
#ifndef BOOSTER_SIDECAR_SAMPLE_HTTP_GET_H_
#define BOOSTER_SIDECAR_SAMPLE_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace booster::agent {

struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string path = "/";
};

absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

// Errors: kInvalidArgument for a bad URL, kUnavailable for connection failures, timeouts
// and non-2xx statuses (the caller retries next window), kResourceExhausted above
// `max_bytes`.
absl::StatusOr<std::string> HttpGet(const std::string& url, absl::Duration timeout,
                                    size_t max_bytes = 8 << 20);

struct HttpResponse {
  int code = 0;
  std::string body;
};

// HttpGet, but any HTTP status is a response (probes and tests look at the status).
absl::StatusOr<HttpResponse> HttpFetch(const std::string& url, absl::Duration timeout,
                                       size_t max_bytes = 8 << 20);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_HTTP_GET_H_
