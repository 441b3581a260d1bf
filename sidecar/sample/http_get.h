// The agent's HTTP client: GET over plain http, for scraping an application's /metrics
// inside the pod (on the pod's own addresses) and for tests of the agent's own endpoints.
// libcurl underneath — this file's .cc is the only code that uses it — so responses may be
// HTTP/1.1 with chunked transfer encoding or a Content-Length, or HTTP/1.0 ending at close.
// No TLS, no redirects, no proxy (the environment's http_proxy is ignored: the targets are
// in the pod); one timeout bounds the whole exchange.
//
//   absl::StatusOr<std::string> body = HttpGet("http://127.0.0.1:8080/metrics",
//                                              absl::Seconds(2));
#ifndef BOOSTER_SIDECAR_SAMPLE_HTTP_GET_H_
#define BOOSTER_SIDECAR_SAMPLE_HTTP_GET_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace booster::agent {

// Errors: kInvalidArgument for a URL that is not http://host[:port][/path] (https, a bad
// port, no host), kUnavailable for connection failures, timeouts, responses that are not
// HTTP and non-2xx statuses (the caller retries next window), kResourceExhausted for a
// body above `max_bytes`.
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
