// The booster-operator command line (docs/operator.md): every flag, its environment
// fallback and its default. Pure: the environment is passed in, so tests need no setenv.
//
//   absl::StatusOr<OperatorOptions> o = ParseOptions(argc, argv, [](const char* n) {...});
#ifndef BOOSTER_OPERATOR_CONTROLLER_OPTIONS_H_
#define BOOSTER_OPERATOR_CONTROLLER_OPTIONS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace booster::controller {

struct OperatorOptions {
  std::string kubeconfig;  // "" = in-cluster config
  // This installation's name (the chart: NAMESPACE/RELEASE). A profile is managed by the
  // instance that claimed it (rollout::kInstanceAnnotation); others leave it alone.
  std::string instance = "booster";
  std::string ns;          // "" = all namespaces
  std::string metrics_bind_address = "0.0.0.0:8080";
  std::string health_probe_bind_address = "0.0.0.0:8081";
  bool leader_elect = true;
  std::string leader_election_namespace = "booster-system";
  std::string leader_election_id = "booster-operator";
  std::string identity;  // never empty after parsing
  std::string agent_image = "booster-agent:dev";
  std::string agent_image_pull_policy = "IfNotPresent";
  int workers = 4;
  // The agents' gRPC stream (docs/feedback.md): served by the leader, TLS only. Without a
  // certificate and key there is no feedback server (and a warning says so).
  std::string feedback_bind_address = "0.0.0.0:9443";
  std::string feedback_cert_file;
  std::string feedback_key_file;
  // Only the leader serves the stream: it points this Service (NAMESPACE/NAME, no
  // selector) at its own pod IP through an EndpointSlice. "" = publish nothing.
  std::string feedback_service;
  std::string pod_ip;
  // What the injected agents are told (BOOSTER_OPERATOR, BOOSTER_OPERATOR_CA): where the
  // feedback server is and the CA to verify it with. Without a CA file the agents are not
  // told to stream (they log their windows instead).
  std::string agent_feedback_address = "booster-operator.booster-system.svc:9443";
  std::string agent_feedback_ca_file;
  std::string log_format = "json";
  // Namespaces that opted in to Booster (controller/namespace_policy.h): by name, and by
  // the label <namespace_label>=true. Both empty: every namespace but the control plane's.
  std::vector<std::string> enabled_namespaces;
  std::string namespace_label;
  // The Prometheus the profiles' Prometheus metrics are queried on (docs/prometheus-metrics.md);
  // "" = none: a profile with one is InvalidSpec, saying so.
  std::string prometheus_address;
  std::string prometheus_ca_file;
  std::string prometheus_bearer_token_file;
  absl::Duration prometheus_timeout = absl::Seconds(5);
  bool help = false;
};

// One flag: its name (without "--"), the environment variables read when it is not
// given (first set one wins), and a description for --help.
struct FlagInfo {
  std::string name;
  std::vector<std::string> env;
  std::string default_text;
  std::string help;
};
const std::vector<FlagInfo>& Flags();
std::string Usage();

using GetEnv = std::function<std::string(const char* name)>;

// Flags as --name=value or --name value; precedence flag > environment > default.
// `hostname_pid` is the identity's last fallback. kInvalidArgument names the bad flag.
absl::StatusOr<OperatorOptions> ParseOptions(const std::vector<std::string>& args,
                                             const GetEnv& getenv,
                                             const std::string& hostname_pid);

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_OPTIONS_H_
