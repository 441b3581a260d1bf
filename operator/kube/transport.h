// Transport: the one seam between the Kubernetes client and an HTTP/TLS library. The REST
// client speaks only this interface; cpprest_transport.cc implements it with cpprestsdk
// (archived upstream), and a libcurl implementation could replace it without touching
// anything else. Implementations turn library exceptions and socket/TLS errors into
// absl::Status (kUnavailable for network trouble, kFailedPrecondition for a certificate
// that does not verify) and never interpret HTTP status codes.
#ifndef BOOSTER_OPERATOR_KUBE_TRANSPORT_H_
#define BOOSTER_OPERATOR_KUBE_TRANSPORT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace booster::kube {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // path and query, already escaped: "/api/v1/pods?limit=500"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Whole-request deadline for Send(); for Stream() the longest silence tolerated
  // between two reads.
  absl::Duration timeout = absl::Seconds(30);
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;  // raw Retry-After header, "" if absent
};

// The body of a streaming response (a watch). Read() from one thread; Cancel() from any.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // The next piece of the body, as it arrives; "" at the end of the stream. After
  // Cancel(), returns kCancelled promptly.
  virtual absl::StatusOr<std::string> Read() = 0;
  virtual void Cancel() = 0;
};

struct StreamResponse {
  int status = 0;
  std::string retry_after;
  std::string error_body;                  // the whole body when status is not 2xx
  std::unique_ptr<ResponseStream> stream;  // set when status is 2xx
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends a request and reads the whole answer. Thread-safe.
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  // Sends a request and returns as soon as the headers are in. Thread-safe.
  virtual absl::StatusOr<StreamResponse> Stream(const HttpRequest& request) = 0;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_TRANSPORT_H_
