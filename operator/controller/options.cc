#include "operator/controller/options.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace booster::controller {

const std::vector<FlagInfo>& Flags() {
  static const std::vector<FlagInfo>* flags = new std::vector<FlagInfo>{
      {"kubeconfig", {"BOOSTER_KUBECONFIG", "KUBECONFIG"}, "in-cluster config",
       "kubeconfig file of the cluster"},
      {"namespace", {"BOOSTER_NAMESPACE"}, "all namespaces", "watch only this namespace"},
      {"metrics-bind-address", {"BOOSTER_METRICS_BIND_ADDRESS"}, "0.0.0.0:8080",
       "HOST:PORT of /metrics (port 0: any free port, logged)"},
      {"health-probe-bind-address", {"BOOSTER_HEALTH_PROBE_BIND_ADDRESS"}, "0.0.0.0:8081",
       "HOST:PORT of /healthz and /readyz (port 0: any free port, logged)"},
      {"leader-elect", {"BOOSTER_LEADER_ELECT"}, "true",
       "elect a leader on a Lease; only the leader reconciles"},
      {"leader-election-namespace", {"BOOSTER_LEADER_ELECTION_NAMESPACE", "POD_NAMESPACE"},
       "booster-system", "namespace of the Lease"},
      {"leader-election-id", {"BOOSTER_LEADER_ELECTION_ID"}, "booster-operator",
       "name of the Lease"},
      {"identity", {"BOOSTER_IDENTITY", "POD_NAME"}, "hostname_pid",
       "holder identity written into the Lease"},
      {"agent-image", {"BOOSTER_AGENT_IMAGE"}, "booster-agent:dev",
       "image of the agent sidecar and init container injected into pods"},
      {"agent-image-pull-policy", {"BOOSTER_AGENT_IMAGE_PULL_POLICY"}, "IfNotPresent",
       "imagePullPolicy of the injected containers"},
      {"workers", {"BOOSTER_WORKERS"}, "4", "profiles reconciled in parallel"},
      {"feedback-bind-address", {"BOOSTER_FEEDBACK_BIND_ADDRESS"}, "0.0.0.0:9443",
       "HOST:PORT of the agents' gRPC stream (TLS; served by the leader only)"},
      {"feedback-cert-file", {"BOOSTER_FEEDBACK_CERT_FILE"}, "none: no feedback server",
       "PEM certificate (chain) of the feedback server"},
      {"feedback-key-file", {"BOOSTER_FEEDBACK_KEY_FILE"}, "none",
       "PEM private key of the feedback server"},
      {"feedback-service", {"BOOSTER_FEEDBACK_SERVICE"}, "none",
       "NAMESPACE/NAME of a Service without selector that the leader points at itself "
       "(its EndpointSlice), so agents reach the leader only"},
      {"pod-ip", {"POD_IP"}, "", "this pod's IP, for --feedback-service"},
      {"agent-feedback-address", {"BOOSTER_AGENT_FEEDBACK_ADDRESS"},
       "booster-operator.booster-system.svc:9443",
       "HOST:PORT the injected agents stream to (the Service in front of the feedback server)"},
      {"agent-feedback-ca-file", {"BOOSTER_AGENT_FEEDBACK_CA_FILE"},
       "none: agents do not stream",
       "PEM CA certificate(s) the agents verify the feedback server with; given to them in "
       "BOOSTER_OPERATOR_CA"},
      {"log-format", {"BOOSTER_LOG_FORMAT"}, "json", "json (one object per line) or text"},
      {"instance", {"BOOSTER_INSTANCE"}, "booster",
       "this installation's name: a profile is claimed by the first instance that sees it "
       "(annotation booster.dev/instance) and left alone by every other"},
      {"enabled-namespaces", {"BOOSTER_ENABLED_NAMESPACES"}, "none",
       "comma-separated namespaces whose profiles the operator acts on (opted in by name)"},
      {"namespace-label", {"BOOSTER_NAMESPACE_LABEL"}, "none",
       "a namespace labelled <this>=true has opted in (needs list/watch on namespaces). "
       "With neither this nor --enabled-namespaces every namespace has; kube-system, "
       "kube-public and kube-node-lease never have"},
      {"prometheus-address", {"BOOSTER_PROMETHEUS_ADDRESS"},
       "none: profiles' prometheus metrics are refused (InvalidSpec)",
       "http(s)://HOST:PORT[/PREFIX] of the Prometheus API the analysis' prometheus metrics "
       "are queried on"},
      {"prometheus-ca-file", {"BOOSTER_PROMETHEUS_CA_FILE"}, "the system's roots",
       "PEM CA certificate(s), the only roots trusted for an https Prometheus"},
      {"prometheus-bearer-token-file", {"BOOSTER_PROMETHEUS_BEARER_TOKEN_FILE"}, "none",
       "a file whose content is sent as a bearer token with every query (re-read each time)"},
      {"prometheus-timeout", {"BOOSTER_PROMETHEUS_TIMEOUT"}, "5s",
       "how long one Prometheus query may take"},
      {"help", {}, "", "print this help"},
  };
  return *flags;
}

std::string Usage() {
  std::string out = "usage: booster-operator [flags]\n";
  for (const FlagInfo& f : Flags()) {
    absl::StrAppend(&out, "  --", f.name, "  ", f.help);
    if (!f.default_text.empty()) absl::StrAppend(&out, " (default ", f.default_text, ")");
    for (size_t i = 0; i < f.env.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? " [env " : ", ", f.env[i], i + 1 == f.env.size() ? "]" : "");
    }
    out.push_back('\n');
  }
  return out;
}

absl::StatusOr<OperatorOptions> ParseOptions(const std::vector<std::string>& args,
                                             const GetEnv& getenv,
                                             const std::string& hostname_pid) {
  std::map<std::string, const FlagInfo*> known;
  for (const FlagInfo& f : Flags()) known[f.name] = &f;
  std::map<std::string, std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", a, "\""));
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (known.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if (name == "help") {
        value = "true";
      } else if (name == "leader-elect" &&
                 (i + 1 >= args.size() || absl::StartsWith(args[i + 1], "--"))) {
        value = "true";  // a bare boolean flag
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    given[name] = value;
  }
  auto get = [&](const std::string& name, const std::string& fallback) -> std::string {
    auto it = given.find(name);
    if (it != given.end()) return it->second;
    for (const std::string& env : known.at(name)->env) {
      std::string v = getenv(env.c_str());
      if (!v.empty()) return v;
    }
    return fallback;
  };
  OperatorOptions o;
  o.help = get("help", "") == "true";
  o.kubeconfig = get("kubeconfig", "");
  o.ns = get("namespace", "");
  o.metrics_bind_address = get("metrics-bind-address", o.metrics_bind_address);
  o.health_probe_bind_address = get("health-probe-bind-address", o.health_probe_bind_address);
  const std::string elect = absl::AsciiStrToLower(get("leader-elect", "true"));
  if (elect == "true" || elect == "1") {
    o.leader_elect = true;
  } else if (elect == "false" || elect == "0") {
    o.leader_elect = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--leader-elect must be true or false, not \"", elect, "\""));
  }
  o.leader_election_namespace = get("leader-election-namespace", o.leader_election_namespace);
  o.leader_election_id = get("leader-election-id", o.leader_election_id);
  o.identity = get("identity", hostname_pid);
  o.agent_image = get("agent-image", o.agent_image);
  o.agent_image_pull_policy = get("agent-image-pull-policy", o.agent_image_pull_policy);
  if (o.agent_image_pull_policy != "Always" && o.agent_image_pull_policy != "IfNotPresent" &&
      o.agent_image_pull_policy != "Never") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--agent-image-pull-policy must be Always, IfNotPresent or Never, not \"",
        o.agent_image_pull_policy, "\""));
  }
  const std::string workers = get("workers", "4");
  if (!absl::SimpleAtoi(workers, &o.workers) || o.workers < 1 || o.workers > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers must be an integer from 1 to 64, not \"", workers, "\""));
  }
  o.feedback_bind_address = get("feedback-bind-address", o.feedback_bind_address);
  o.feedback_cert_file = get("feedback-cert-file", "");
  o.feedback_key_file = get("feedback-key-file", "");
  if (o.feedback_cert_file.empty() != o.feedback_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--feedback-cert-file and --feedback-key-file go together: give both or neither");
  }
  o.feedback_service = get("feedback-service", "");
  o.pod_ip = get("pod-ip", "");
  if (!o.feedback_service.empty()) {
    if (o.feedback_service.find('/') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--feedback-service must be NAMESPACE/NAME, not \"", o.feedback_service, "\""));
    }
    if (o.pod_ip.empty()) {
      return absl::InvalidArgumentError(
          "--feedback-service needs this pod's IP: set POD_IP (downward API status.podIP) or "
          "--pod-ip");
    }
  }
  o.agent_feedback_address = get("agent-feedback-address", o.agent_feedback_address);
  if (o.agent_feedback_address.empty() || o.agent_feedback_address.rfind(':') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--agent-feedback-address must be HOST:PORT, not \"", o.agent_feedback_address, "\""));
  }
  o.agent_feedback_ca_file = get("agent-feedback-ca-file", "");
  for (absl::string_view n :
       absl::StrSplit(get("enabled-namespaces", ""), ',', absl::SkipWhitespace())) {
    o.enabled_namespaces.emplace_back(absl::StripAsciiWhitespace(n));
  }
  o.namespace_label = get("namespace-label", "");
  if (!o.namespace_label.empty() && o.namespace_label.find_first_of(" =,") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--namespace-label must be a label key such as booster.dev/enabled, not \"",
        o.namespace_label, "\""));
  }
  o.instance = get("instance", o.instance);
  if (o.instance.empty() || o.instance.size() > 253 ||
      o.instance.find_first_of(" \t\n,=") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--instance must be a name such as booster-system/booster (no spaces, commas or '='), "
        "not \"", o.instance, "\""));
  }
  o.prometheus_address = get("prometheus-address", "");
  o.prometheus_ca_file = get("prometheus-ca-file", "");
  o.prometheus_bearer_token_file = get("prometheus-bearer-token-file", "");
  if (o.prometheus_address.empty() &&
      (!o.prometheus_ca_file.empty() || !o.prometheus_bearer_token_file.empty())) {
    return absl::InvalidArgumentError(
        "--prometheus-ca-file and --prometheus-bearer-token-file need --prometheus-address");
  }
  const std::string timeout = get("prometheus-timeout", "5s");
  if (!absl::ParseDuration(timeout, &o.prometheus_timeout) ||
      o.prometheus_timeout <= absl::ZeroDuration() || o.prometheus_timeout > absl::Minutes(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--prometheus-timeout must be a duration from 1ms to 1m such as 5s, not \"", timeout,
        "\""));
  }
  o.log_format = get("log-format", o.log_format);
  if (o.log_format != "json" && o.log_format != "text") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format must be json or text, not \"", o.log_format, "\""));
  }
  for (std::string* addr :
       {&o.metrics_bind_address, &o.health_probe_bind_address, &o.feedback_bind_address}) {
    // ":8080" (controller-runtime's spelling) means every interface; CivetWeb, which
    // serves both endpoints, needs the host spelled out.
    if (absl::StartsWith(*addr, ":")) *addr = absl::StrCat("0.0.0.0", *addr);
    const size_t colon = addr->rfind(':');
    int port = -1;
    if (colon == std::string::npos || !absl::SimpleAtoi(addr->substr(colon + 1), &port) ||
        port < 0 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind address \"", *addr, "\" is not HOST:PORT"));
    }
  }
  if (o.identity.empty()) o.identity = hostname_pid;
  return o;
}

}  // namespace booster::controller
