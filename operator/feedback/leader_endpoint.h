// The leader's address behind the agents' Service. Only the leader serves the feedback
// stream, so the Service the agents dial has no selector: the leader writes its own pod IP
// into the Service's EndpointSlice when it starts serving, and kube-proxy sends every
// agent to it. A new leader overwrites the slice; between the old leader's death and that,
// agents fail to connect and retry (sidecar/feedback/client/feedback_client.h).
//
//   LeaderEndpoint e{.ns = "booster-system", .service = "booster-operator-feedback",
//                    .pod = "booster-operator-7f9c-x2x", .ip = "10.244.0.7", .port = 9443};
//   absl::Status s = PublishLeaderEndpoint(client, e);  // create or update the slice
#ifndef BOOSTER_OPERATOR_FEEDBACK_LEADER_ENDPOINT_H_
#define BOOSTER_OPERATOR_FEEDBACK_LEADER_ENDPOINT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "operator/kube/client.h"

namespace booster::feedback {

inline const kube::Resource kEndpointSlices{"discovery.k8s.io", "v1", "endpointslices", true};

struct LeaderEndpoint {
  std::string ns;       // the Service's namespace (the operator's)
  std::string service;  // a Service without selector, with a port named `port_name`
  std::string pod;      // the leader's pod, for targetRef
  std::string ip;       // its IP (IPv4 or IPv6)
  int port = 9443;
  std::string port_name = "agents";
};

// "NAMESPACE/NAME" of --feedback-service, or kInvalidArgument naming the flag.
absl::Status ParseServiceRef(absl::string_view ref, std::string* ns, std::string* name);

// The EndpointSlice (named like the Service) that sends the Service's traffic to `e`.
kube::Json LeaderEndpointSlice(const LeaderEndpoint& e);

// Creates the slice, or updates it when it names another address (a 409 from a concurrent
// writer is returned: the caller retries). kInvalidArgument for an empty ip or service.
absl::Status PublishLeaderEndpoint(kube::Client& client, const LeaderEndpoint& e);

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_LEADER_ENDPOINT_H_
