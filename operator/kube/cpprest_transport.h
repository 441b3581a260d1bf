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

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/transport.h"

namespace booster::kube {

// Validates the TLS material of `config` (PEM parse) before any connection is made.
absl::StatusOr<std::unique_ptr<Transport>> NewCpprestTransport(const Config& config);

// A Client over the cpprestsdk transport.
absl::StatusOr<std::unique_ptr<Client>> NewClient(const Config& config,
                                                  Clock* clock = &RealClock::Get());

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_CPPREST_TRANSPORT_H_
