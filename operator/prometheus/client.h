// The Querier on Prometheus's HTTP API: GET <address>/api/v1/query?query=...&time=..., the
// bearer token (if any) re-read from its file at each query, an https server verified
// against the given CA (or the system's roots). The HTTP library stays behind
// kube::Transport (operator/kube/cpprest_transport.h), the one seam to cpprestsdk.
//
//   absl::StatusOr<std::unique_ptr<HttpQuerier>> q = NewHttpQuerier(
//       {.address = "http://prometheus.monitoring:9090"});
//   QueryResult r = (*q)->Query("sum(up)", absl::Now());
#ifndef BOOSTER_OPERATOR_PROMETHEUS_CLIENT_H_
#define BOOSTER_OPERATOR_PROMETHEUS_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/kube/transport.h"
#include "operator/prometheus/source.h"

namespace booster::promql {

struct ServerOptions {
  // "http://host:port" or "https://host:port", optionally with a path prefix
  // ("https://thanos.example/prometheus"); the operator's --prometheus-address.
  std::string address;
  std::string ca_file;            // PEM; the only root trusted for https when set
  std::string bearer_token_file;  // its content, trimmed, is sent as "Authorization: Bearer"
  absl::Duration timeout = absl::Seconds(5);
};

// The address split into the origin ("https://host:port") and the path prefix ("" or
// "/prometheus", no trailing /); kInvalidArgument saying what is wrong with it.
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address);

// The request path of an instant query of `promql` at `at` under `prefix`.
std::string QueryPath(const std::string& prefix, const std::string& promql, absl::Time at);

class HttpQuerier final : public Querier {
 public:
  // `transport` speaks to the address's origin.
  HttpQuerier(std::unique_ptr<kube::Transport> transport, ServerOptions options,
              std::string prefix);
  QueryResult Query(const std::string& promql, absl::Time at) override;

 private:
  const std::unique_ptr<kube::Transport> transport_;
  const ServerOptions options_;
  const std::string prefix_;
};

// Checks the options (address, readable CA and token files) and connects nothing yet.
absl::StatusOr<std::unique_ptr<HttpQuerier>> NewHttpQuerier(const ServerOptions& options);

}  // namespace booster::promql

#endif  // BOOSTER_OPERATOR_PROMETHEUS_CLIENT_H_
