#include "sidecar/loop/run_config.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/loop/directive_from_tuning.h"

namespace booster::agent {
namespace {

// A setting's text and where it came from ("--window" or "BOOSTER_WINDOW"), or nothing.
struct Setting {
  std::string value;
  std::string source;
  bool set = false;
};

class Sources {
 public:
  Sources(const std::map<std::string, std::string>& flags, const EnvLookup& env)
      : flags_(flags), env_(env) {}

  Setting Get(const std::string& flag, const std::string& variable) const {
    auto it = flags_.find(flag);
    if (it != flags_.end()) return {it->second, "--" + flag, true};
    if (!variable.empty()) {
      std::optional<std::string> v = env_(variable);
      if (v.has_value() && !absl::StripAsciiWhitespace(*v).empty()) {
        return {std::string(absl::StripAsciiWhitespace(*v)), variable, true};
      }
    }
    return {};
  }

 private:
  const std::map<std::string, std::string>& flags_;
  const EnvLookup& env_;
};

absl::Status Bad(const Setting& s, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(s.source, "=\"", s.value, "\": ", why));
}

bool IsDns1123Label(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

// The stream to the operator: its address, and then the CA and token it cannot go without.
absl::Status OperatorOptions(const Sources& src, RunOptions* o) {
  Setting op = src.Get("operator", "BOOSTER_OPERATOR");
  if (!op.set || op.value.empty()) return absl::OkStatus();  // --operator= turns it off
  size_t colon = op.value.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(op.value.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return Bad(op, "needs host:port, e.g. booster-operator.booster-system.svc:9443");
  }
  o->operator_address = op.value;
  if (Setting file = src.Get("operator-ca-file", ""); file.set) {
    if (file.value.empty()) return Bad(file, "needs the path of the CA's PEM file");
    o->operator_ca_file = file.value;
    o->operator_ca_source = absl::StrCat("--operator-ca-file=\"", file.value, "\"");
  } else if (Setting pem = src.Get("", "BOOSTER_OPERATOR_CA"); pem.set) {
    if (!absl::StrContains(pem.value, "-----BEGIN CERTIFICATE-----")) {
      // Not echoed: it is meant to be a certificate, and may be long.
      return absl::InvalidArgumentError(
          "BOOSTER_OPERATOR_CA: not PEM text (no -----BEGIN CERTIFICATE-----): the variable "
          "holds the CA certificate itself, not a path; for a file give "
          "--operator-ca-file=PATH");
    }
    o->operator_ca_pem = pem.value;
    o->operator_ca_source = "BOOSTER_OPERATOR_CA";
  } else {
    return Bad(op,
               "streaming to the operator needs the CA its certificate chains to: set "
               "BOOSTER_OPERATOR_CA to the CA's PEM text, or give --operator-ca-file=PATH");
  }
  if (o->token_file.empty()) {
    return Bad(op,
               "streaming to the operator needs the pod's service-account token (audience "
               "booster-operator): set BOOSTER_TOKEN_FILE or give --token-file=PATH");
  }
  if (!o->directive_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--directive-file=\"", o->directive_file,
                                                   "\": directives come from the operator when ",
                                                   op.source, " is set; give one or the other"));
  }
  return absl::OkStatus();
}

}  // namespace

EnvLookup EnvFromProcess() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

absl::StatusOr<absl::Duration> ParseWindowDuration(const std::string& text) {
  absl::Duration d;
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    if (!std::isfinite(seconds)) return absl::InvalidArgumentError("not a finite duration");
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        "not a duration (e.g. 30s, 1m30s, 500ms) or a number of seconds");
  }
  if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("must be a positive, finite duration");
  }
  return d;
}

absl::StatusOr<RunOptions> RunOptionsFrom(const std::map<std::string, std::string>& flags,
                                          const EnvLookup& env, const std::string& hostname) {
  static constexpr absl::string_view kFlags[] = {"state-dir",
                                                 "control-file",
                                                 "pod-namespace",
                                                 "pod",
                                                 "pod-uid",
                                                 "node",
                                                 "profile",
                                                 "arm",
                                                 "mode",
                                                 "template-hash",
                                                 "target-pid",
                                                 "target-cgroup",
                                                 "target-command",
                                                 "containers",
                                                 "window",
                                                 "tick",
                                                 "max-ticks",
                                                 "metrics-address",
                                                 "app-metrics",
                                                 "app-metrics-url",
                                                 "report-file",
                                                 "directive-file",
                                                 "operator",
                                                 "operator-ca-file",
                                                 "token-file",
                                                 "tuning",
                                                 "netns",
                                                 "ipcns",
                                                 "target-cpu-limit",
                                                 "target-memory-limit"};
  for (const auto& [name, value] : flags) {
    bool known = false;
    for (absl::string_view k : kFlags) known |= k == name;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("run: unknown flag --", name));
  }
  Sources src(flags, env);
  RunOptions o;
  AgentConfig& c = o.agent;
  AgentIdentity& id = c.identity;

  auto state_dir = flags.find("state-dir");
  if (state_dir == flags.end() || state_dir->second.empty()) {
    return absl::InvalidArgumentError("--state-dir (the shared volume) is required");
  }
  o.state_dir = state_dir->second;
  c.journal_path = o.state_dir + "/agent.journal";
  Setting control = src.Get("control-file", "BOOSTER_CONTROL");
  c.control_path = control.set ? control.value : o.state_dir + "/control";

  // --- who and what ---
  id.pod_namespace = src.Get("pod-namespace", "POD_NAMESPACE").value;
  Setting pod = src.Get("pod", "POD_NAME");
  id.pod_name = pod.set ? pod.value : (hostname.empty() ? "unknown" : hostname);
  id.pod_uid = src.Get("pod-uid", "POD_UID").value;
  id.node_name = src.Get("node", "NODE_NAME").value;
  if (Setting p = src.Get("profile", "BOOSTER_PROFILE"); p.set) {
    std::vector<std::string> parts = absl::StrSplit(p.value, '/');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return Bad(p, "the profile must be namespace/name");
    }
    id.profile = p.value;
  }
  if (Setting a = src.Get("arm", "BOOSTER_ARM"); a.set) {
    if (a.value != "baseline" && a.value != "canary" && a.value != "promoted") {
      return Bad(a, "the arm must be baseline, canary or promoted");
    }
    id.arm = a.value;
  }
  if (Setting m = src.Get("mode", "BOOSTER_AGENT_MODE"); m.set) {
    if (m.value != "observe" && m.value != "tune") {
      return Bad(m, "the mode must be observe or tune");
    }
    id.mode = m.value;
  }
  id.template_hash = src.Get("template-hash", "BOOSTER_TEMPLATE_HASH").value;

  // --- what to watch ---
  if (auto it = flags.find("target-pid"); it != flags.end()) {
    for (absl::string_view p : absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
      int pid = 0;
      if (!absl::SimpleAtoi(p, &pid) || pid <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--target-pid=\"", it->second, "\": needs process ids, e.g. 12,15"));
      }
      c.selector.pids.push_back(pid);
    }
  }
  if (auto it = flags.find("target-cgroup"); it != flags.end()) {
    c.selector.cgroup_contains = it->second;
  }
  if (auto it = flags.find("target-command"); it != flags.end()) {
    c.selector.command_contains = it->second;
  }
  // The sidecar as the operator injects it: no selector, watch the rest of the pod.
  c.selector.pod_peers = c.selector.pids.empty() && c.selector.cgroup_contains.empty() &&
                         c.selector.command_contains.empty();
  c.selector.pod_uid = id.pod_uid;
  if (Setting s = src.Get("containers", "BOOSTER_CONTAINERS"); s.set) {
    for (absl::string_view name : absl::StrSplit(s.value, ',', absl::SkipWhitespace())) {
      name = absl::StripAsciiWhitespace(name);
      if (!IsDns1123Label(name)) {
        return Bad(s, absl::StrCat("\"", name, "\" is not a container name"));
      }
      c.selector.containers.emplace_back(name);
    }
  }

  // --- how long, where to serve, what to scrape ---
  if (Setting w = src.Get("window", "BOOSTER_WINDOW"); w.set) {
    absl::StatusOr<absl::Duration> d = ParseWindowDuration(w.value);
    if (!d.ok()) return Bad(w, d.status().message());
    c.window = *d;
  }
  if (auto it = flags.find("tick"); it != flags.end()) {
    Setting t{it->second, "--tick", true};
    absl::StatusOr<absl::Duration> d = ParseWindowDuration(t.value);
    if (!d.ok()) return Bad(t, d.status().message());
    c.tick = *d;
  }
  if (auto it = flags.find("max-ticks"); it != flags.end()) {
    if (!absl::SimpleAtoi(it->second, &c.max_ticks) || c.max_ticks < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-ticks=\"", it->second, "\": needs a number"));
    }
  }
  if (Setting m = src.Get("metrics-address", "BOOSTER_METRICS_ADDRESS"); m.set) {
    size_t colon = m.value.rfind(':');
    int port = -1;
    if (colon == std::string::npos || !absl::SimpleAtoi(m.value.substr(colon + 1), &port) ||
        port < 0 || port > 65535) {
      return Bad(m, "needs [address]:port, e.g. :9901 or 127.0.0.1:9901");
    }
    o.metrics_address = m.value;
  }
  if (Setting a = src.Get("app-metrics", "BOOSTER_APP_METRICS"); a.set) {
    absl::StatusOr<AppMetricsSource> s = ParseAppMetricsSource(a.value);
    if (!s.ok()) return Bad(a, s.status().message());
    c.app_metrics = *s;
  }
  if (auto it = flags.find("app-metrics-url"); it != flags.end()) {
    if (it->second.rfind("http://", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--app-metrics-url=\"", it->second, "\": only http:// URLs are scraped"));
    }
    c.app_metrics.url = it->second;
  }
  // Finding the port by probing listening sockets is for the pod, where every socket of
  // the network namespace belongs to the pod; with an explicit selector the agent may be
  // in a shared namespace, so it scrapes only what it is told.
  c.discover_app_port = c.selector.pod_peers;

  // --- the rest of the pod's wiring ---
  auto flag = [&](const char* name, const char* def) {
    auto it = flags.find(name);
    return it == flags.end() ? std::string(def) : it->second;
  };
  o.report_file = flag("report-file", "-");
  o.report_file_set = flags.count("report-file") > 0;
  o.directive_file = flag("directive-file", "");
  o.netns = flag("netns", "");
  o.ipcns = flag("ipcns", "");
  o.token_file = src.Get("token-file", "BOOSTER_TOKEN_FILE").value;
  if (Setting t = src.Get("tuning", "BOOSTER_TUNING"); t.set) {
    o.tuning_json = t.value;
    absl::StatusOr<std::optional<Directive>> d = DirectiveFromTuning(t.value, id.arm);
    // Not echoed: the tuning is long; the message says what is wrong with it.
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(t.source, ": not the operator's tuning JSON: ", d.status().message()));
    }
    c.initial_directive = *std::move(d);
  }
  // The app container's limits from its pod spec (the agent cannot read its cgroup).
  if (Setting m = src.Get("target-cpu-limit", "BOOSTER_TARGET_CPU_LIMIT"); m.set) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(m.value, &v) || v <= 0) {
      return Bad(m, "needs the CPU limit in millicores, e.g. 500");
    }
    c.target_cpu_limit_millis = v;
  }
  if (Setting m = src.Get("target-memory-limit", "BOOSTER_TARGET_MEMORY_LIMIT"); m.set) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(m.value, &v) || v <= 0) {
      return Bad(m, "needs the memory limit in bytes, e.g. 67108864");
    }
    c.target_memory_limit_bytes = v;
  }
  if (absl::Status s = OperatorOptions(src, &o); !s.ok()) return s;
  return o;
}

std::string DescribeRunOptions(const RunOptions& o) {
  const AgentConfig& c = o.agent;
  const AgentIdentity& id = c.identity;
  auto or_none = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::string targets;
  if (c.selector.pod_peers) {
    targets = c.selector.containers.empty()
                  ? "pod-peers(all containers)"
                  : absl::StrCat("pod-peers(", absl::StrJoin(c.selector.containers, ","), ")");
  } else {
    std::vector<std::string> parts;
    if (!c.selector.pids.empty()) parts.push_back("pids=" + absl::StrJoin(c.selector.pids, ","));
    if (!c.selector.cgroup_contains.empty())
      parts.push_back("cgroup~" + c.selector.cgroup_contains);
    if (!c.selector.command_contains.empty()) {
      parts.push_back("command~" + c.selector.command_contains);
    }
    targets = absl::StrJoin(parts, ",");
  }
  const bool streaming = !o.operator_address.empty();
  std::string reports = o.report_file;
  if (streaming) reports = o.report_file_set ? "operator+" + o.report_file : "operator";
  std::string directives = streaming ? "operator" : or_none(o.directive_file);
  return absl::StrCat(
      "run pod=", or_none(id.pod_namespace), "/", id.pod_name, " uid=", or_none(id.pod_uid),
      " node=", or_none(id.node_name), " profile=", or_none(id.profile), " arm=", id.arm,
      " mode=", id.mode, " template-hash=", or_none(id.template_hash),
      " incarnation=", or_none(id.incarnation), " window=", absl::FormatDuration(c.window),
      " tick=", absl::FormatDuration(c.tick), " metrics-address=", or_none(o.metrics_address),
      " app-metrics=[",
      c.discover_app_port || c.app_metrics.port != 0 || !c.app_metrics.url.empty()
          ? DescribeAppMetricsSource(c.app_metrics)
          : "not scraped: no port and no url",
      "] targets=", targets, " state-dir=", o.state_dir, " control=", c.control_path,
      " reports=", reports, " directives=", directives, " operator=", or_none(o.operator_address),
      " operator-ca=",
      or_none(o.operator_ca_file.empty() ? o.operator_ca_source : o.operator_ca_file),
      " token-file=", or_none(o.token_file),
      " tuning=", o.tuning_json.empty() ? "-" : absl::StrCat(o.tuning_json.size(), " bytes"),
      c.initial_directive.has_value()
          ? absl::StrCat(" placement=", PlacementModeName(c.initial_directive->placement),
                         " numa=", NumaModeName(c.initial_directive->numa))
          : "",
      " target-limits=",
      c.target_cpu_limit_millis ? absl::StrCat(*c.target_cpu_limit_millis, "m") : "-", "/",
      c.target_memory_limit_bytes ? absl::StrCat(*c.target_memory_limit_bytes) : "-");
}

}  // namespace booster::agent
