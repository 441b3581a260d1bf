// Prometheus's HTTP API as a Querier (client.h).
#include "operator/prometheus/client.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/cpprest_transport.h"

namespace booster::promql {

absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address) {
  const size_t scheme_end = address.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : address.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return absl::InvalidArgumentError(
        absl::StrCat("the Prometheus address \"", address,
                     "\" is not http:// or https:// (e.g. http://prometheus.monitoring:9090)"));
  }
  const size_t host_start = scheme_end + 3;
  size_t path_start = address.find_first_of("/?#", host_start);
  if (path_start == std::string::npos) path_start = address.size();
  if (path_start == host_start) {
    return absl::InvalidArgumentError(
        absl::StrCat("the Prometheus address \"", address, "\" has no host"));
  }
  std::string prefix = address.substr(path_start);
  if (absl::StrContains(prefix, "?") || absl::StrContains(prefix, "#")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the Prometheus address \"", address, "\" has a query or fragment; give its base URL"));
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return std::make_pair(address.substr(0, path_start), prefix);
}

std::string QueryPath(const std::string& prefix, const std::string& promql, absl::Time at) {
  return absl::StrCat(prefix, "/api/v1/query?query=", kube::QueryEscape(promql), "&time=",
                      absl::StrFormat("%.3f", absl::ToDoubleSeconds(at - absl::UnixEpoch())));
}

HttpQuerier::HttpQuerier(std::unique_ptr<kube::Transport> transport, ServerOptions options,
                         std::string prefix)
    : transport_(std::move(transport)), options_(std::move(options)), prefix_(std::move(prefix)) {}

QueryResult HttpQuerier::Query(const std::string& promql, absl::Time at) {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = QueryPath(prefix_, promql, at);
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "booster-operator/0.1"}};
  req.timeout = options_.timeout;
  if (!options_.bearer_token_file.empty()) {
    // Re-read at every query: a mounted Secret's token is rotated in place.
    absl::StatusOr<std::string> token = kube::ReadFileToString(options_.bearer_token_file);
    if (!token.ok()) {
      return QueryResult{QueryOutcome::kError, 0,
                         absl::StrCat("the bearer token file: ", token.status().message())};
    }
    req.headers.emplace_back("Authorization",
                             absl::StrCat("Bearer ", absl::StripAsciiWhitespace(*token)));
  }
  absl::StatusOr<kube::HttpResponse> r = transport_->Send(req);
  if (!r.ok()) {
    return QueryResult{QueryOutcome::kError, 0,
                       absl::StrCat("Prometheus at ", options_.address,
                                    " did not answer: ", r.status().message())};
  }
  return ParseQueryResponse(r->status, r->body);
}

absl::StatusOr<std::unique_ptr<HttpQuerier>> NewHttpQuerier(const ServerOptions& options) {
  absl::StatusOr<std::pair<std::string, std::string>> parts = SplitAddress(options.address);
  if (!parts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prometheus-address: ", parts.status().message()));
  }
  std::string ca;
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> read = kube::ReadFileToString(options.ca_file);
    if (!read.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus-ca-file: ", read.status().message()));
    }
    if (!absl::StartsWith(parts->first, "https://")) {
      return absl::InvalidArgumentError(
          "--prometheus-ca-file is set but the Prometheus address is not https://");
    }
    ca = *std::move(read);
  }
  if (!options.bearer_token_file.empty()) {
    absl::StatusOr<std::string> token = kube::ReadFileToString(options.bearer_token_file);
    if (!token.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--prometheus-bearer-token-file: ", token.status().message()));
    }
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--prometheus-timeout must be positive");
  }
  absl::StatusOr<std::unique_ptr<kube::Transport>> t =
      kube::NewCpprestWebTransport(parts->first, options.timeout, ca);
  if (!t.ok()) return t.status();
  return std::make_unique<HttpQuerier>(*std::move(t), options, parts->second);
}

}  // namespace booster::promql
