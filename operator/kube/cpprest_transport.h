// The Transport implementation on cpprestsdk (Boost.Asio + OpenSSL). This header and its
// .cc are the only places that include cpprestsdk; to move to libcurl, write another
// Transport and change NewClient().
//
// TLS: when the config carries a CA, it is the only trusted root (system roots are
// dropped); the server certificate is always verified, hostname included. A failed
// verification is kFailedPrecondition naming the server and the likely cause.
//
//   absl::StatusOr<std::unique_ptr<Client>> client = NewClient(*config);
#ifndef BOOSTER_OPERATOR_KUBE_CPPREST_TRANSPORT_H_
#define BOOSTER_OPERATOR_KUBE_CPPREST_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/transport.h"

namespace booster::kube {

// Validates the TLS material of `config` (PEM parse) before any connection is made.
absl::StatusOr<std::unique_ptr<Transport>> NewCpprestTransport(const Config& config);

// A transport to any web server at `origin` ("http://host:port" or "https://host"): no
// client certificate; for https the system's CA roots (the operator's outgoing webhooks), or
// `ca_pem` as the only root when set (a Prometheus behind a private CA).
absl::StatusOr<std::unique_ptr<Transport>> NewCpprestWebTransport(const std::string& origin,
                                                                  absl::Duration timeout,
                                                                  const std::string& ca_pem = "");

// A Client over the cpprestsdk transport.
absl::StatusOr<std::unique_ptr<Client>> NewClient(const Config& config,
                                                  Clock* clock = &RealClock::Get());

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_CPPREST_TRANSPORT_H_
