// The configuration of `booster-agent run`: from its flags, else from the environment the
// operator gives the injected sidecar (operator/rollout/pod_template.cc), else defaults.
// A flag always wins over its variable; an empty variable counts as unset. Pure: the
// environment comes in as a lookup function, so tests need not touch the real one.
//
//   absl::StatusOr<RunOptions> o = RunOptionsFrom(flags, EnvFromProcess(), hostname);
//   if (!o.ok()) { print o.status().message(); exit 2; }   // names the flag or variable
//   std::fprintf(stderr, "%s\n", DescribeRunOptions(*o).c_str());
//
// | flag                | variable                | default                             |
// |---------------------|-------------------------|-------------------------------------|
// | --pod-namespace     | POD_NAMESPACE           | ""                                  |
// | --pod               | POD_NAME                | the host name                       |
// | --pod-uid           | POD_UID                 | ""                                  |
// | --node              | NODE_NAME               | ""                                  |
// | --profile           | BOOSTER_PROFILE         | "" (namespace/name)                 |
// | --arm               | BOOSTER_ARM             | baseline (baseline|canary|promoted) |
// | --mode              | BOOSTER_AGENT_MODE      | observe (observe|tune)              |
// | --template-hash     | BOOSTER_TEMPLATE_HASH   | ""                                  |
// | --window            | BOOSTER_WINDOW          | 10s (Go duration or seconds)        |
// | --metrics-address   | BOOSTER_METRICS_ADDRESS | none: no /metrics, no /healthz      |
// | --app-metrics       | BOOSTER_APP_METRICS     | {} (sample/app_metrics.h)           |
// | --containers        | BOOSTER_CONTAINERS      | "" = every container of the pod     |
// | --control-file      | BOOSTER_CONTROL         | <state-dir>/control                 |
// | --operator          | BOOSTER_OPERATOR        | "": no stream (--operator= too)     |
// | --operator-ca-file  | BOOSTER_OPERATOR_CA     | "" (the variable holds the PEM text)|
// | --token-file        | BOOSTER_TOKEN_FILE      | ""                                  |
// | --report-file       | —                       | "-" (stdout) without an operator;   |
// |                     |                         | none with one                       |
// | --directive-file    | —                       | "": none                            |
//
// With an operator (host:port of its feedback endpoint, e.g.
// booster-operator.booster-system.svc:9443) the agent streams its windows and Applied
// results to it over TLS (feedback/feedback_reporter.h, docs/feedback.md) and takes its directives
// from it; a CA (--operator-ca-file wins over BOOSTER_OPERATOR_CA) and a token file are
// then required, and --directive-file is refused (one source of directives). The JSON
// lines are then written only when --report-file is given. Without an operator the CA and
// token are ignored and everything is as before: JSON lines to --report-file (stdout).
#ifndef BOOSTER_SIDECAR_LOOP_RUN_CONFIG_H_
#define BOOSTER_SIDECAR_LOOP_RUN_CONFIG_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/loop/agent_loop.h"

namespace booster::agent {

// Everything `run` needs besides the agent loop's own configuration.
struct RunOptions {
  AgentConfig agent;
  std::string state_dir;
  std::string metrics_address;  // "": serve nothing
  std::string report_file = "-";
  bool report_file_set = false;  // --report-file was given (with an operator: also write it)
  std::string directive_file;    // "": no directive file
  std::string operator_address;  // "": do not stream
  // The operator's CA: the PEM text from BOOSTER_OPERATOR_CA, or a file to read it from
  // (--operator-ca-file, which wins). ca_source names the one in use for messages.
  std::string operator_ca_pem;
  std::string operator_ca_file;
  std::string operator_ca_source;
  std::string token_file;
  // BOOSTER_TUNING as given; its placement and NUMA policy (with the library knobs) become
  // agent.initial_directive (directive_from_tuning.h).
  std::string tuning_json;
  std::string netns;  // --netns / --ipcns: joined before anything else
  std::string ipcns;
};

// The value of an environment variable, nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup EnvFromProcess();

// `flags` as parsed from --name=value / --name value. Errors are kInvalidArgument with a
// message that starts with the flag or variable the bad value came from, e.g.
// `BOOSTER_WINDOW="abc": not a duration (e.g. 30s, 1m30s) or a number of seconds`.
absl::StatusOr<RunOptions> RunOptionsFrom(const std::map<std::string, std::string>& flags,
                                          const EnvLookup& env, const std::string& hostname);

// "30s", "1.5s", "2m", or a bare number of seconds ("30"); > 0 and finite.
absl::StatusOr<absl::Duration> ParseWindowDuration(const std::string& text);

// One line: every effective setting, for the log at start.
std::string DescribeRunOptions(const RunOptions& options);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_LOOP_RUN_CONFIG_H_
