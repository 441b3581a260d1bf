#include "operator/rollout/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace booster::rollout {
namespace {

// Collects every problem of a spec so that one `kubectl describe` shows them all.
class Errors {
 public:
  void Add(absl::string_view path, absl::string_view message) {
    list_.push_back(absl::StrCat(path, ": ", message));
  }
  bool empty() const { return list_.empty(); }
  std::string Joined() const { return absl::StrJoin(list_, "; "); }

 private:
  std::vector<std::string> list_;
};

std::string Path(absl::string_view parent, absl::string_view key) {
  return absl::StrCat(parent, ".", key);
}

const Json* Field(const Json& obj, absl::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string TypeName(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number_float()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_array()) return "a list";
  if (j.is_object()) return "an object";
  return "null";
}

// Checks that `j` is an object and reports keys the schema does not know (the API server
// prunes them, so they only reach here from offline validation, where they are typos).
bool CheckObject(const Json& j, absl::string_view path,
                 std::initializer_list<absl::string_view> keys, Errors& errors) {
  if (!j.is_object()) {
    errors.Add(path, absl::StrCat("must be an object, got ", TypeName(j)));
    return false;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      errors.Add(Path(path, it.key()),
                 absl::StrCat("unknown field; known fields are ", absl::StrJoin(keys, ", ")));
    }
  }
  return true;
}

std::optional<int64_t> AsInt(const Json& j) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

std::optional<int64_t> GetInt(const Json& obj, absl::string_view key, absl::string_view parent,
                              int64_t min, int64_t max, Errors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  std::optional<int64_t> v = AsInt(*j);
  if (!v) {
    errors.Add(Path(parent, key), absl::StrCat("must be an integer, got ", TypeName(*j)));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    errors.Add(Path(parent, key),
               absl::StrCat("must be between ", min, " and ", max, ", got ", *v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> GetNumber(const Json& obj, absl::string_view key, absl::string_view parent,
                                double min, double max, Errors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_number()) {
    errors.Add(Path(parent, key), absl::StrCat("must be a number, got ", TypeName(*j)));
    return std::nullopt;
  }
  double v = j->get<double>();
  if (!(v >= min && v <= max)) {
    errors.Add(Path(parent, key), absl::StrCat("must be between ", min, " and ", max, ", got ", v));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> GetBool(const Json& obj, absl::string_view key, absl::string_view parent,
                            Errors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_boolean()) {
    errors.Add(Path(parent, key), absl::StrCat("must be true or false, got ", TypeName(*j)));
    return std::nullopt;
  }
  return j->get<bool>();
}

std::optional<std::string> GetString(const Json& obj, absl::string_view key,
                                     absl::string_view parent, Errors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_string()) {
    errors.Add(Path(parent, key), absl::StrCat("must be a string, got ", TypeName(*j)));
    return std::nullopt;
  }
  return j->get<std::string>();
}

// Returns the index of the value in `values`, or nullopt (reported) when absent/invalid.
std::optional<size_t> GetEnum(const Json& obj, absl::string_view key, absl::string_view parent,
                              std::initializer_list<absl::string_view> values, Errors& errors) {
  std::optional<std::string> s = GetString(obj, key, parent, errors);
  if (!s) return std::nullopt;
  size_t i = 0;
  for (absl::string_view v : values) {
    if (*s == v) return i;
    ++i;
  }
  errors.Add(Path(parent, key), absl::StrCat("unsupported value \"", *s, "\"; use one of ",
                                             absl::StrJoin(values, ", ")));
  return std::nullopt;
}

bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = absl::ascii_islower(c) || absl::ascii_isdigit(c);
    if (!alnum && !(c == '-' && i != 0 && i + 1 != s.size())) return false;
  }
  return true;
}

bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (!IsDnsLabel(label)) return false;
  }
  return true;
}

// --- sysctls -------------------------------------------------------------------------------

using ValueCheck = std::function<std::string(absl::string_view)>;

std::vector<int64_t> Ints(absl::string_view value, bool* ok) {
  std::vector<int64_t> out;
  *ok = true;
  for (absl::string_view part : absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v)) {
      *ok = false;
      return {};
    }
    out.push_back(v);
  }
  return out;
}

ValueCheck IntRange(int64_t min, int64_t max) {
  return [min, max](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 1) return absl::StrCat("must be one integer from ", min, " to ", max);
    if (v[0] < min || v[0] > max) return absl::StrCat("must be from ", min, " to ", max);
    return "";
  };
}

// "low high", low <= high, both within [min, max].
ValueCheck Pair(int64_t min, int64_t max) {
  return [min, max](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 2 || v[0] < min || v[1] > max || v[0] > v[1]) {
      return absl::StrCat("must be two integers \"low high\" with ", min,
                          " <= low <= high <= ", max);
    }
    return "";
  };
}

// "min default max" buffer sizes (tcp_rmem/tcp_wmem).
ValueCheck Triple() {
  return [](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 3 || v[0] < 1 || v[0] > v[1] || v[1] > v[2] || v[2] > (1LL << 31)) {
      return "must be three byte counts \"min default max\" with 1 <= min <= default <= max "
             "<= 2147483648";
    }
    return "";
  };
}

ValueCheck OneOf(std::vector<std::string> allowed) {
  return [allowed](absl::string_view value) -> std::string {
    for (const std::string& a : allowed) {
      if (value == a) return "";
    }
    return absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "));
  };
}

struct SysctlRule {
  const char* key;
  ValueCheck check;
};

// Namespaced sysctls only (they live in the pod's own network/IPC namespace); anything
// host-wide is refused whatever the kubelet would allow.
const std::vector<SysctlRule>& SysctlRules() {
  static const auto* rules = new std::vector<SysctlRule>{
      {"net.core.somaxconn", IntRange(1, 65535)},
      {"net.ipv4.tcp_max_syn_backlog", IntRange(128, 1048576)},
      {"net.ipv4.tcp_tw_reuse", IntRange(0, 2)},
      {"net.ipv4.ip_local_port_range", Pair(1024, 65535)},
      {"net.ipv4.ip_unprivileged_port_start", IntRange(0, 65536)},
      {"net.ipv4.ping_group_range", Pair(0, 2147483647)},
      {"net.ipv4.tcp_fin_timeout", IntRange(1, 600)},
      {"net.ipv4.tcp_keepalive_time", IntRange(1, 32767)},
      {"net.ipv4.tcp_keepalive_intvl", IntRange(1, 32767)},
      {"net.ipv4.tcp_keepalive_probes", IntRange(1, 127)},
      {"net.ipv4.tcp_syncookies", IntRange(0, 2)},
      {"net.ipv4.tcp_syn_retries", IntRange(1, 127)},
      {"net.ipv4.tcp_synack_retries", IntRange(1, 127)},
      {"net.ipv4.tcp_retries2", IntRange(3, 15)},
      {"net.ipv4.tcp_rmem", Triple()},
      {"net.ipv4.tcp_wmem", Triple()},
      {"net.ipv4.tcp_slow_start_after_idle", IntRange(0, 1)},
      {"net.ipv4.tcp_fastopen", IntRange(0, 3)},
      {"net.ipv4.tcp_notsent_lowat", IntRange(1, 2147483647)},
      {"net.ipv4.tcp_max_tw_buckets", IntRange(0, 2147483647)},
      {"net.ipv4.tcp_mtu_probing", IntRange(0, 2)},
      {"net.ipv4.tcp_no_metrics_save", IntRange(0, 1)},
      {"net.ipv4.tcp_timestamps", IntRange(0, 2)},
      {"net.ipv4.tcp_ecn", IntRange(0, 2)},
      {"net.ipv4.tcp_autocorking", IntRange(0, 1)},
      {"net.ipv4.tcp_congestion_control", OneOf({"cubic", "reno", "bbr"})},
      {"kernel.shm_rmid_forced", IntRange(0, 1)},
      {"kernel.shmmax", IntRange(1, INT64_MAX)},
      {"kernel.shmall", IntRange(1, INT64_MAX)},
      {"kernel.shmmni", IntRange(1, 32768)},
      {"kernel.msgmax", IntRange(1, 2147483647)},
      {"kernel.msgmnb", IntRange(1, 2147483647)},
      {"kernel.msgmni", IntRange(1, 32768)},
      {"fs.mqueue.msg_max", IntRange(1, 65536)},
      {"fs.mqueue.msgsize_max", IntRange(128, 16777216)},
      {"fs.mqueue.queues_max", IntRange(0, 2147483647)},
  };
  return *rules;
}

const SysctlRule* FindSysctl(absl::string_view key) {
  for (const SysctlRule& r : SysctlRules()) {
    if (key == r.key) return &r;
  }
  return nullptr;
}

// --- sub-parsers ---------------------------------------------------------------------------

void ParseTargetRef(const Json* j, TargetRef& out, Errors& errors) {
  const std::string p = "spec.targetRef";
  if (j == nullptr) {
    errors.Add(p, "is required: the Deployment to tune, e.g. {kind: Deployment, name: checkout}");
    return;
  }
  if (!CheckObject(*j, p, {"apiVersion", "kind", "name", "containers"}, errors)) return;
  if (auto v = GetString(*j, "apiVersion", p, errors)) {
    if (*v != "apps/v1") errors.Add(Path(p, "apiVersion"), "must be apps/v1");
  }
  if (auto k = GetEnum(*j, "kind", p, {"Deployment"}, errors)) {
    out.kind = "Deployment";
  } else if (Field(*j, "kind") == nullptr) {
    errors.Add(Path(p, "kind"), "is required; only Deployment is supported");
  }
  std::optional<std::string> name = GetString(*j, "name", p, errors);
  if (!name) {
    if (Field(*j, "name") == nullptr) errors.Add(Path(p, "name"), "is required");
  } else if (name->size() > 245 || !IsDnsSubdomain(*name)) {
    errors.Add(Path(p, "name"),
               absl::StrCat("\"", *name,
                            "\" is not a valid Deployment name (lower-case DNS subdomain of at "
                            "most 245 characters, so that <name>-booster is valid too)"));
  } else {
    out.name = *name;
  }
  if (const Json* c = Field(*j, "containers")) {
    const std::string cp = Path(p, "containers");
    if (!c->is_array()) {
      errors.Add(cp, "must be a list of container names");
    } else if (c->size() > 16) {
      errors.Add(cp, "must list at most 16 containers");
    } else {
      std::set<std::string> seen;
      for (const Json& e : *c) {
        if (!e.is_string() || !IsDnsLabel(e.get<std::string>())) {
          errors.Add(cp, absl::StrCat("entry ", e.dump(), " is not a container name"));
          continue;
        }
        if (!seen.insert(e.get<std::string>()).second) {
          errors.Add(cp, absl::StrCat("lists \"", e.get<std::string>(), "\" twice"));
          continue;
        }
        out.containers.push_back(e.get<std::string>());
      }
    }
  }
}

bool IsGoMemLimit(absl::string_view s) {
  if (s == "auto") return true;
  if (!s.empty() && s.back() == '%') {
    int v;
    return absl::SimpleAtoi(s.substr(0, s.size() - 1), &v) && v >= 1 && v <= 100 &&
           s.substr(0, s.size() - 1) == absl::StrCat(v);
  }
  size_t digits = 0;
  while (digits < s.size() && absl::ascii_isdigit(s[digits])) ++digits;
  if (digits == 0 || s[0] == '0') return false;
  absl::string_view unit = s.substr(digits);
  return unit.empty() || unit == "B" || unit == "KiB" || unit == "MiB" || unit == "GiB" ||
         unit == "TiB";
}

void ParseTuning(const Json& j, Tuning& out, Errors& errors) {
  const std::string p = "spec.tuning";
  if (!CheckObject(j, p, {"cpu", "sysctls", "runtime"}, errors)) return;
  if (const Json* cpu = Field(j, "cpu")) {
    const std::string cp = Path(p, "cpu");
    if (CheckObject(*cpu, cp, {"placement", "numa"}, errors)) {
      if (auto v =
              GetEnum(*cpu, "placement", cp, {"none", "spread", "whole-cores", "pinned"}, errors)) {
        out.placement = static_cast<CpuPlacement>(*v);
      }
      if (auto v = GetEnum(*cpu, "numa", cp, {"none", "preferred", "align", "bind"}, errors)) {
        out.numa = static_cast<NumaPolicy>(*v);
      }
      if ((out.numa == NumaPolicy::kAlign || out.numa == NumaPolicy::kBind) &&
          out.placement == CpuPlacement::kNone) {
        errors.Add(Path(cp, "numa"),
                   absl::StrCat(NumaName(out.numa),
                                " needs a CPU placement to know which node's CPUs to use; set "
                                "spec.tuning.cpu.placement to spread, whole-cores or pinned, or "
                                "use numa: preferred"));
      }
    }
  }
  if (const Json* s = Field(j, "sysctls")) {
    const std::string sp = Path(p, "sysctls");
    if (!s->is_object()) {
      errors.Add(sp, "must be a map of sysctl name to value");
    } else if (s->size() > 16) {
      errors.Add(sp, "must have at most 16 entries");
    } else {
      for (auto it = s->begin(); it != s->end(); ++it) {
        const std::string kp = absl::StrCat(sp, "[", it.key(), "]");
        std::string value;
        if (std::optional<int64_t> i = AsInt(it.value())) {
          value = absl::StrCat(*i);
        } else if (it.value().is_string()) {
          value = std::string(absl::StripAsciiWhitespace(it.value().get<std::string>()));
        } else {
          errors.Add(
              kp, absl::StrCat("value must be a string or an integer, got ", TypeName(it.value())));
          continue;
        }
        const SysctlRule* rule = FindSysctl(it.key());
        if (rule == nullptr) {
          if (it.key().find('/') != std::string::npos) {
            errors.Add(kp, "write sysctl names with dots (net.core.somaxconn), not slashes");
          } else {
            errors.Add(kp,
                       "is not a namespaced sysctl Booster can set; see docs/crd.md for "
                       "the allowed list");
          }
          continue;
        }
        if (std::string why = rule->check(value); !why.empty()) {
          errors.Add(kp, absl::StrCat("\"", value, "\" ", why));
          continue;
        }
        out.sysctls[it.key()] = value;
      }
    }
  }
  const Json* rt = Field(j, "runtime");
  if (rt == nullptr) return;
  const std::string rp = Path(p, "runtime");
  if (!CheckObject(*rt, rp, {"go", "preload"}, errors)) return;
  if (const Json* go = Field(*rt, "go")) {
    const std::string gp = Path(rp, "go");
    if (CheckObject(*go, gp, {"gomaxprocs", "gomemlimit", "gogc"}, errors)) {
      if (const Json* v = Field(*go, "gomaxprocs")) {
        std::optional<int64_t> i = AsInt(*v);
        if (i && *i >= 1 && *i <= 1024) {
          out.go.gomaxprocs = absl::StrCat(*i);
        } else if (v->is_string() && v->get<std::string>() == "auto") {
          out.go.gomaxprocs = "auto";
        } else {
          errors.Add(
              Path(gp, "gomaxprocs"),
              absl::StrCat("must be \"auto\" or an integer from 1 to 1024, got ", v->dump()));
        }
      }
      if (auto v = GetString(*go, "gomemlimit", gp, errors)) {
        if (IsGoMemLimit(*v)) {
          out.go.gomemlimit = *v;
        } else {
          errors.Add(Path(gp, "gomemlimit"),
                     absl::StrCat("\"", *v,
                                  "\" is not \"auto\", a percentage of the memory limit "
                                  "(\"85%\") or a size such as \"768MiB\""));
        }
      }
      if (const Json* v = Field(*go, "gogc")) {
        std::optional<int64_t> i = AsInt(*v);
        if (i && *i >= 10 && *i <= 10000) {
          out.go.gogc = absl::StrCat(*i);
        } else if (v->is_string() && v->get<std::string>() == "off") {
          out.go.gogc = "off";
        } else {
          errors.Add(
              Path(gp, "gogc"),
              absl::StrCat("must be \"off\" or an integer from 10 to 10000, got ", v->dump()));
        }
      }
    }
  }
  if (const Json* pl = Field(*rt, "preload")) {
    const std::string pp = Path(rp, "preload");
    if (CheckObject(*pl, pp,
                    {"listenBacklog", "tcpNoDelay", "tcpQuickAck", "busyPollMicros",
                     "receiveBufferBytes", "sendBufferBytes", "coarseClocks", "allocator"},
                    errors)) {
      PreloadTuning& o = out.preload;
      if (auto v = GetInt(*pl, "listenBacklog", pp, 1, 65535, errors)) o.listen_backlog = *v;
      o.tcp_no_delay = GetBool(*pl, "tcpNoDelay", pp, errors);
      o.tcp_quick_ack = GetBool(*pl, "tcpQuickAck", pp, errors);
      if (auto v = GetInt(*pl, "busyPollMicros", pp, 1, 1000, errors)) o.busy_poll_us = *v;
      if (auto v = GetInt(*pl, "receiveBufferBytes", pp, 4096, 64 << 20, errors)) {
        o.receive_buffer_bytes = *v;
      }
      if (auto v = GetInt(*pl, "sendBufferBytes", pp, 4096, 64 << 20, errors)) {
        o.send_buffer_bytes = *v;
      }
      o.coarse_clocks = GetBool(*pl, "coarseClocks", pp, errors);
      if (auto v = GetEnum(*pl, "allocator", pp, {"default", "jemalloc", "mimalloc", "tcmalloc"},
                           errors)) {
        o.allocator = static_cast<Allocator>(*v);
      }
    }
  }
  // The kernel caps a listen backlog at somaxconn: asking for more is a silent no-op.
  auto somaxconn = out.sysctls.find("net.core.somaxconn");
  if (out.preload.listen_backlog && somaxconn != out.sysctls.end()) {
    int64_t cap = 0;
    if (absl::SimpleAtoi(somaxconn->second, &cap) && *out.preload.listen_backlog > cap) {
      errors.Add(Path(rp, "preload.listenBacklog"),
                 absl::StrCat(*out.preload.listen_backlog, " exceeds net.core.somaxconn (", cap,
                              "), which caps every backlog; raise the sysctl or lower the "
                              "backlog"));
    }
  }
}

std::optional<absl::Duration> GetDuration(const Json& obj, absl::string_view key,
                                          absl::string_view parent, absl::Duration min,
                                          absl::Duration max, Errors& errors) {
  std::optional<std::string> s = GetString(obj, key, parent, errors);
  if (!s) return std::nullopt;
  absl::StatusOr<absl::Duration> d = ParseGoDuration(*s);
  if (!d.ok()) {
    errors.Add(Path(parent, key), d.status().message());
    return std::nullopt;
  }
  if (*d < min || *d > max) {
    errors.Add(Path(parent, key), absl::StrCat("must be between ", FormatGoDuration(min), " and ",
                                               FormatGoDuration(max), ", got ", *s));
    return std::nullopt;
  }
  return *d;
}

// spec.rollout.analysis.source: the same rules as the agent's BOOSTER_APP_METRICS, so a
// profile the operator accepts never leaves agents failing on it.
void ParseAppSource(const Json& j, const std::string& p, AnalysisSpec& out, Errors& errors) {
  if (!CheckObject(j, p,
                   {"port", "path", "latencyHistogram", "requestCounter", "errorLabel",
                    "errorMatch"},
                   errors)) {
    return;
  }
  Json src = Json::object();
  if (auto v = GetInt(j, "port", p, 1, 65535, errors)) src["port"] = *v;
  if (auto v = GetString(j, "path", p, errors)) {
    if (v->empty() || (*v)[0] != '/' || v->size() > 256) {
      errors.Add(Path(p, "path"), absl::StrCat("must start with '/' (e.g. /metrics), got \"",
                                               *v, "\""));
    } else {
      src["path"] = *v;
    }
  }
  static const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
  for (const auto& [key, re, what] :
       {std::tuple{"latencyHistogram", &kMetricName, "a Prometheus metric name"},
        std::tuple{"requestCounter", &kMetricName, "a Prometheus metric name"},
        std::tuple{"errorLabel", &kLabelName, "a Prometheus label name"}}) {
    if (auto v = GetString(j, key, p, errors)) {
      if (v->size() > 200 || !std::regex_match(*v, *re)) {
        errors.Add(Path(p, key), absl::StrCat("must be ", what, ", got \"", *v, "\""));
      } else {
        src[key] = *v;
      }
    }
  }
  if (auto v = GetString(j, "errorMatch", p, errors)) {
    try {
      std::regex check(*v, std::regex::ECMAScript);
      src["errorMatch"] = *v;
    } catch (const std::regex_error&) {
      errors.Add(Path(p, "errorMatch"),
                 absl::StrCat("is not a regular expression: \"", *v, "\" (e.g. \"5..\")"));
    }
  }
  out.source = std::move(src);
}

void ParseAnalysis(const Json& j, AnalysisSpec& out, absl::Duration step_duration, Errors& errors) {
  const std::string p = "spec.rollout.analysis";
  if (!CheckObject(j, p,
                   {"mode", "interval", "warmup", "minSamples", "confidence", "maxExtensions",
                    "onInconclusive", "metrics", "source"},
                   errors)) {
    return;
  }
  if (const Json* src = Field(j, "source")) ParseAppSource(*src, Path(p, "source"), out, errors);
  if (auto v = GetEnum(j, "mode", p, {"Time", "Metrics"}, errors)) {
    out.mode = static_cast<AnalysisMode>(*v);
  }
  if (auto v = GetDuration(j, "interval", p, absl::Seconds(1), absl::Hours(1), errors)) {
    out.interval = *v;
  }
  if (auto v = GetDuration(j, "warmup", p, absl::ZeroDuration(), absl::Hours(1), errors)) {
    out.warmup = *v;
  }
  if (auto v = GetInt(j, "minSamples", p, 1, 100000, errors)) out.min_samples = *v;
  if (auto v = GetNumber(j, "confidence", p, 0.5, 0.9999, errors)) out.confidence = *v;
  if (auto v = GetInt(j, "maxExtensions", p, 0, 20, errors)) out.max_extensions = *v;
  if (auto v = GetEnum(j, "onInconclusive", p, {"Rollback", "Promote"}, errors)) {
    out.on_inconclusive = static_cast<InconclusivePolicy>(*v);
  }
  if (const Json* m = Field(j, "metrics")) {
    const std::string mp = Path(p, "metrics");
    if (!m->is_array()) {
      errors.Add(mp, "must be a list");
    } else if (m->size() > 16) {
      errors.Add(mp, "must have at most 16 entries");
    } else {
      std::set<std::string> seen;
      for (size_t i = 0; i < m->size(); ++i) {
        const Json& e = (*m)[i];
        const std::string ep = absl::StrCat(mp, "[", i, "]");
        if (!CheckObject(e, ep,
                         {"name", "maxRegressionPercent", "minImprovementPercent", "required"},
                         errors)) {
          continue;
        }
        MetricSpec metric;
        std::optional<size_t> name = GetEnum(
            e, "name", ep,
            {"latencyP50", "latencyP99", "latencyP999", "throughput", "errorRate", "cpuPerRequest",
             "cpuThrottling", "runQueueDelay", "listenOverflows", "retransmits"},
            errors);
        if (!name) {
          if (Field(e, "name") == nullptr) errors.Add(Path(ep, "name"), "is required");
          continue;
        }
        metric.name = e["name"].get<std::string>();
        if (!seen.insert(metric.name).second) {
          errors.Add(ep, absl::StrCat("metric ", metric.name, " is listed twice"));
          continue;
        }
        if (auto v = GetNumber(e, "maxRegressionPercent", ep, 0, 1000, errors)) {
          metric.max_regression_percent = *v;
        }
        metric.min_improvement_percent = GetNumber(e, "minImprovementPercent", ep, 0, 1000, errors);
        if (auto v = GetBool(e, "required", ep, errors)) metric.required = *v;
        out.metrics.push_back(metric);
      }
    }
  }
  if (out.mode == AnalysisMode::kMetrics && out.metrics.empty()) {
    errors.Add(Path(p, "metrics"),
               "mode Metrics needs at least one metric, e.g. [{name: latencyP99}]");
  }
  if (Field(j, "interval") == nullptr && out.interval > step_duration) {
    // The default 30s window does not fit a shorter step: shrink it to the step.
    out.interval = step_duration;
  } else if (out.interval > step_duration) {
    errors.Add(Path(p, "interval"),
               absl::StrCat(FormatGoDuration(out.interval), " is longer than stepDuration (",
                            FormatGoDuration(step_duration),
                            "): a step would end before its first window"));
  }
}

void ParseRollout(const Json& j, RolloutSpec& out, Errors& errors) {
  const std::string p = "spec.rollout";
  if (!CheckObject(j, p,
                   {"steps", "stepDuration", "progressDeadline", "paused", "hpaPolicy",
                    "onNewRevision", "analysis"},
                   errors)) {
    return;
  }
  if (const Json* s = Field(j, "steps")) {
    const std::string sp = Path(p, "steps");
    if (!s->is_array()) {
      errors.Add(sp, "must be a list of percentages, e.g. [10, 50, 100]");
    } else if (s->empty() || s->size() > 20) {
      errors.Add(sp, "must have between 1 and 20 entries, e.g. [10, 50, 100]");
    } else {
      std::vector<int> steps;
      bool ok = true;
      for (const Json& e : *s) {
        std::optional<int64_t> w = AsInt(e);
        if (!w || *w < 1 || *w > 100) {
          errors.Add(sp, absl::StrCat("entry ", e.dump(), " is not a percentage from 1 to 100"));
          ok = false;
          continue;
        }
        steps.push_back(static_cast<int>(*w));
      }
      if (ok) {
        for (size_t i = 1; i < steps.size(); ++i) {
          if (steps[i] <= steps[i - 1]) {
            errors.Add(sp, absl::StrCat("must strictly ascend, but ", steps[i], " follows ",
                                        steps[i - 1], "; e.g. [10, 50, 100]"));
            ok = false;
            break;
          }
        }
        if (steps.back() != 100) {
          errors.Add(sp, absl::StrCat("must end at 100 (the whole Deployment on the tuning), "
                                      "but ends at ",
                                      steps.back()));
          ok = false;
        }
      }
      if (ok) out.steps = std::move(steps);
    }
  }
  if (auto v = GetDuration(j, "stepDuration", p, absl::Seconds(1), absl::Hours(24), errors)) {
    out.step_duration = *v;
  }
  if (auto v = GetDuration(j, "progressDeadline", p, absl::Seconds(10), absl::Hours(24), errors)) {
    out.progress_deadline = *v;
  }
  if (auto v = GetBool(j, "paused", p, errors)) out.paused = *v;
  if (auto v = GetEnum(j, "hpaPolicy", p, {"Follow", "Pause", "Fixed"}, errors)) {
    out.hpa_policy = static_cast<HpaPolicy>(*v);
  }
  if (auto v = GetEnum(j, "onNewRevision", p, {"Restart", "Rollback", "Reverify"}, errors)) {
    out.on_new_revision = static_cast<NewRevisionPolicy>(*v);
  }
  if (const Json* a = Field(j, "analysis")) {
    ParseAnalysis(*a, out.analysis, out.step_duration, errors);
  } else if (out.analysis.interval > out.step_duration) {
    // The default 30s window does not fit a shorter step: shrink it to the step.
    out.analysis.interval = out.step_duration;
  }
}


std::string StringAt(const Json& j, absl::string_view key) {
  const Json* v = Field(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t IntAt(const Json& j, absl::string_view key) {
  const Json* v = Field(j, key);
  if (v == nullptr) return 0;
  std::optional<int64_t> i = AsInt(*v);
  return i.value_or(0);
}

int IntAt32(const Json& j, absl::string_view key) {
  int64_t v = IntAt(j, key);
  return static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

absl::Time TimeAt(const Json& j, absl::string_view key) {
  return ParseTimeOr(StringAt(j, key), absl::InfinitePast());
}

void PutTime(Json& j, const char* key, absl::Time t) {
  if (t != absl::InfinitePast()) j[key] = FormatRfc3339(t);
}

}  // namespace

// --- public --------------------------------------------------------------------------------

absl::StatusOr<absl::Duration> ParseGoDuration(absl::string_view text) {
  // The CRD's pattern: ([0-9]+(\.[0-9]+)?(ms|s|m|h))+
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration; write e.g. 30s, 2m, 1h30m or 500ms"));
  };
  if (text.empty()) return bad();
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    if (i == start) return bad();
    if (i < text.size() && text[i] == '.') {
      ++i;
      size_t frac = i;
      while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
      if (i == frac) return bad();
    }
    if (text.substr(i, 2) == "ms") {
      i += 2;
    } else if (i < text.size() && (text[i] == 's' || text[i] == 'm' || text[i] == 'h')) {
      ++i;
    } else {
      return bad();
    }
  }
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return bad();
  }
  return d;
}

std::string FormatGoDuration(absl::Duration d) { return absl::FormatDuration(d); }

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Time ParseTimeOr(absl::string_view text, absl::Time fallback) {
  if (text.empty()) return fallback;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return fallback;
  return t;
}

absl::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending:
      return "Pending";
    case Phase::kEnrolling:
      return "Enrolling";
    case Phase::kProgressing:
      return "Progressing";
    case Phase::kPaused:
      return "Paused";
    case Phase::kPromoting:
      return "Promoting";
    case Phase::kPromoted:
      return "Promoted";
    case Phase::kRollingBack:
      return "RollingBack";
    case Phase::kRolledBack:
      return "RolledBack";
    case Phase::kFailed:
      return "Failed";
  }
  return "Pending";
}

std::optional<Phase> ParsePhase(absl::string_view name) {
  for (Phase p :
       {Phase::kPending, Phase::kEnrolling, Phase::kProgressing, Phase::kPaused, Phase::kPromoting,
        Phase::kPromoted, Phase::kRollingBack, Phase::kRolledBack, Phase::kFailed}) {
    if (PhaseName(p) == name) return p;
  }
  return std::nullopt;
}

absl::string_view AllocatorName(Allocator a) {
  switch (a) {
    case Allocator::kDefault:
      return "default";
    case Allocator::kJemalloc:
      return "jemalloc";
    case Allocator::kMimalloc:
      return "mimalloc";
    case Allocator::kTcmalloc:
      return "tcmalloc";
  }
  return "default";
}

absl::string_view PlacementName(CpuPlacement p) {
  switch (p) {
    case CpuPlacement::kNone:
      return "none";
    case CpuPlacement::kSpread:
      return "spread";
    case CpuPlacement::kWholeCores:
      return "whole-cores";
    case CpuPlacement::kPinned:
      return "pinned";
  }
  return "none";
}

absl::string_view NumaName(NumaPolicy n) {
  switch (n) {
    case NumaPolicy::kNone:
      return "none";
    case NumaPolicy::kPreferred:
      return "preferred";
    case NumaPolicy::kAlign:
      return "align";
    case NumaPolicy::kBind:
      return "bind";
  }
  return "none";
}

bool IsKnownSysctl(absl::string_view key) { return FindSysctl(key) != nullptr; }

std::string CheckSysctlValue(absl::string_view key, absl::string_view value) {
  const SysctlRule* r = FindSysctl(key);
  if (r == nullptr) return "is not a namespaced sysctl Booster can set";
  return r->check(value);
}

std::vector<std::string> KnownSysctls() {
  std::vector<std::string> out;
  for (const SysctlRule& r : SysctlRules()) out.emplace_back(r.key);
  return out;
}

absl::StatusOr<ProfileSpec> ParseSpec(const Json& spec) {
  Errors errors;
  ProfileSpec out;
  if (!CheckObject(spec, "spec", {"targetRef", "tuning", "rollout"}, errors)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  ParseTargetRef(Field(spec, "targetRef"), out.target_ref, errors);
  if (const Json* t = Field(spec, "tuning")) ParseTuning(*t, out.tuning, errors);
  if (const Json* r = Field(spec, "rollout")) ParseRollout(*r, out.rollout, errors);
  if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
  return out;
}

absl::StatusOr<Tuning> TuningFromJson(const Json& tuning) {
  Errors errors;
  Tuning out;
  // TuningToJson writes the Go knobs as the strings they become in the environment
  // ("200"); the spec has them as integers.
  Json j = tuning;
  Json::json_pointer go("/runtime/go");
  if (j.contains(go) && j.at(go).is_object()) {
    for (const char* key : {"gomaxprocs", "gogc"}) {
      Json& g = j.at(go);
      int64_t v;
      if (g.contains(key) && g[key].is_string() && absl::SimpleAtoi(g[key].get<std::string>(), &v)) {
        g[key] = v;
      }
    }
  }
  ParseTuning(j, out, errors);
  if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
  return out;
}

absl::StatusOr<Profile> ParseProfile(const Json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("a BoosterProfile is a JSON object");
  if (std::string kind = StringAt(object, "kind"); !kind.empty() && kind != kKind) {
    return absl::InvalidArgumentError(absl::StrCat("expected kind ", kKind, ", got ", kind));
  }
  Profile p;
  const Json* meta = Field(object, "metadata");
  if (meta == nullptr || !meta->is_object() || StringAt(*meta, "name").empty()) {
    return absl::InvalidArgumentError("a BoosterProfile needs metadata.name");
  }
  p.meta.name = StringAt(*meta, "name");
  p.meta.namespace_ = StringAt(*meta, "namespace");
  p.meta.uid = StringAt(*meta, "uid");
  p.meta.resource_version = StringAt(*meta, "resourceVersion");
  p.meta.generation = IntAt(*meta, "generation");
  p.meta.deleting = !StringAt(*meta, "deletionTimestamp").empty();
  if (const Json* a = Field(*meta, "annotations"); a != nullptr && a->is_object()) {
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (it.value().is_string()) p.meta.annotations[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* f = Field(*meta, "finalizers"); f != nullptr && f->is_array()) {
    for (const Json& e : *f) {
      if (e.is_string()) p.meta.finalizers.push_back(e.get<std::string>());
    }
  }
  const Json* spec = Field(object, "spec");
  p.spec = spec == nullptr ? absl::InvalidArgumentError("spec: is required") : ParseSpec(*spec);
  if (const Json* s = Field(object, "status")) p.status = ParseStatus(*s);
  return p;
}

RolloutStatus ParseStatus(const Json& j) {
  RolloutStatus s;
  if (!j.is_object()) return s;
  s.phase = ParsePhase(StringAt(j, "phase")).value_or(Phase::kPending);
  s.observed_generation = IntAt(j, "observedGeneration");
  s.current_step = IntAt32(j, "currentStep");
  s.canary_weight = IntAt32(j, "canaryWeight");
  s.total_replicas = IntAt32(j, "totalReplicas");
  s.original_replicas = IntAt32(j, "originalReplicas");
  s.stable_replicas = IntAt32(j, "stableReplicas");
  s.canary_replicas = IntAt32(j, "canaryReplicas");
  s.target_floor = IntAt32(j, "targetFloor");
  s.canary_name = StringAt(j, "canaryName");
  s.target_uid = StringAt(j, "targetUID");
  s.target_name = StringAt(j, "targetName");
  s.team_template_hash = StringAt(j, "teamTemplateHash");
  s.rollout_hash = StringAt(j, "rolloutHash");
  s.baseline_tuning = StringAt(j, "baselineTuning");
  s.phase_start_time = TimeAt(j, "phaseStartTime");
  s.step_start_time = TimeAt(j, "stepStartTime");
  s.analysis_start_time = TimeAt(j, "analysisStartTime");
  s.extensions = IntAt32(j, "extensions");
  if (const Json* h = Field(j, "handled")) {
    s.handled.abort = StringAt(*h, "abort");
    s.handled.promote_now = StringAt(*h, "promoteNow");
    s.handled.retry = StringAt(*h, "retry");
  }
  if (const Json* t = Field(j, "lastTransition"); t != nullptr && t->is_object()) {
    s.last_transition = Transition{StringAt(*t, "from"), StringAt(*t, "to"), StringAt(*t, "reason"),
                                   StringAt(*t, "message"), TimeAt(*t, "time")};
  }
  if (const Json* d = Field(j, "lastDecision"); d != nullptr && d->is_object()) {
    Decision dec;
    dec.verdict = StringAt(*d, "verdict");
    dec.step = IntAt32(*d, "step");
    dec.reason = StringAt(*d, "reason");
    dec.message = StringAt(*d, "message");
    dec.time = TimeAt(*d, "time");
    if (const Json* e = Field(*d, "evidence"); e != nullptr && e->is_object()) {
      for (auto it = e->begin(); it != e->end(); ++it) {
        if (it.value().is_string()) dec.evidence[it.key()] = it.value().get<std::string>();
      }
    }
    s.last_decision = dec;
  }
  if (const Json* a = Field(j, "arms"); a != nullptr && a->is_object()) {
    ArmsReport arms;
    arms.step = IntAt32(*a, "step");
    for (auto [key, arm] : {std::pair{"baseline", &arms.baseline}, std::pair{"canary", &arms.canary}}) {
      if (const Json* r = Field(*a, key); r != nullptr && r->is_object()) {
        arm->pods = IntAt32(*r, "pods");
        if (const Json* w = Field(*r, "windows"); w != nullptr && w->is_number_integer()) {
          arm->windows = w->get<int64_t>();
        }
      }
    }
    s.arms = arms;
  }
  if (const Json* c = Field(j, "conditions"); c != nullptr && c->is_array()) {
    for (const Json& e : *c) {
      if (!e.is_object() || StringAt(e, "type").empty()) continue;
      s.conditions.push_back(Condition{
          StringAt(e, "type"), StringAt(e, "status"), StringAt(e, "reason"), StringAt(e, "message"),
          IntAt(e, "observedGeneration"), TimeAt(e, "lastTransitionTime")});
    }
  }
  return s;
}

Json StatusToJson(const RolloutStatus& s) {
  Json j = Json::object();
  j["phase"] = std::string(PhaseName(s.phase));
  j["observedGeneration"] = s.observed_generation;
  j["currentStep"] = s.current_step;
  j["canaryWeight"] = s.canary_weight;
  j["totalReplicas"] = s.total_replicas;
  j["originalReplicas"] = s.original_replicas;
  j["stableReplicas"] = s.stable_replicas;
  j["canaryReplicas"] = s.canary_replicas;
  if (s.target_floor > 0) j["targetFloor"] = s.target_floor;
  if (!s.canary_name.empty()) j["canaryName"] = s.canary_name;
  if (!s.target_uid.empty()) j["targetUID"] = s.target_uid;
  if (!s.target_name.empty()) j["targetName"] = s.target_name;
  if (!s.team_template_hash.empty()) j["teamTemplateHash"] = s.team_template_hash;
  if (!s.rollout_hash.empty()) j["rolloutHash"] = s.rollout_hash;
  if (!s.baseline_tuning.empty()) j["baselineTuning"] = s.baseline_tuning;
  PutTime(j, "phaseStartTime", s.phase_start_time);
  PutTime(j, "stepStartTime", s.step_start_time);
  PutTime(j, "analysisStartTime", s.analysis_start_time);
  j["extensions"] = s.extensions;
  Json handled = Json::object();
  if (!s.handled.abort.empty()) handled["abort"] = s.handled.abort;
  if (!s.handled.promote_now.empty()) handled["promoteNow"] = s.handled.promote_now;
  if (!s.handled.retry.empty()) handled["retry"] = s.handled.retry;
  if (!handled.empty()) j["handled"] = handled;
  if (s.last_transition) {
    Json t = {{"from", s.last_transition->from},
              {"to", s.last_transition->to},
              {"reason", s.last_transition->reason},
              {"message", s.last_transition->message}};
    PutTime(t, "time", s.last_transition->time);
    j["lastTransition"] = t;
  }
  if (s.arms) {
    j["arms"] = {{"step", s.arms->step},
                 {"baseline", {{"pods", s.arms->baseline.pods}, {"windows", s.arms->baseline.windows}}},
                 {"canary", {{"pods", s.arms->canary.pods}, {"windows", s.arms->canary.windows}}}};
  }
  if (s.last_decision) {
    Json d = {{"verdict", s.last_decision->verdict},
              {"step", s.last_decision->step},
              {"reason", s.last_decision->reason},
              {"message", s.last_decision->message},
              {"evidence", Json::object()}};
    for (const auto& [k, v] : s.last_decision->evidence) d["evidence"][k] = v;
    PutTime(d, "time", s.last_decision->time);
    j["lastDecision"] = d;
  }
  Json conds = Json::array();
  for (const Condition& c : s.conditions) {
    Json e = {{"type", c.type},
              {"status", c.status},
              {"reason", c.reason},
              {"message", c.message},
              {"observedGeneration", c.observed_generation}};
    PutTime(e, "lastTransitionTime", c.last_transition_time);
    conds.push_back(e);
  }
  j["conditions"] = conds;
  return j;
}

Json TuningToJson(const Tuning& t) {
  Json j;
  j["cpu"] = {{"placement", std::string(PlacementName(t.placement))},
              {"numa", std::string(NumaName(t.numa))}};
  j["sysctls"] = Json::object();
  for (const auto& [k, v] : t.sysctls) j["sysctls"][k] = v;
  Json go = Json::object();
  if (!t.go.gomaxprocs.empty()) go["gomaxprocs"] = t.go.gomaxprocs;
  if (!t.go.gomemlimit.empty()) go["gomemlimit"] = t.go.gomemlimit;
  if (!t.go.gogc.empty()) go["gogc"] = t.go.gogc;
  Json pl = Json::object();
  const PreloadTuning& p = t.preload;
  if (p.listen_backlog) pl["listenBacklog"] = *p.listen_backlog;
  if (p.tcp_no_delay) pl["tcpNoDelay"] = *p.tcp_no_delay;
  if (p.tcp_quick_ack) pl["tcpQuickAck"] = *p.tcp_quick_ack;
  if (p.busy_poll_us) pl["busyPollMicros"] = *p.busy_poll_us;
  if (p.receive_buffer_bytes) pl["receiveBufferBytes"] = *p.receive_buffer_bytes;
  if (p.send_buffer_bytes) pl["sendBufferBytes"] = *p.send_buffer_bytes;
  if (p.coarse_clocks) pl["coarseClocks"] = *p.coarse_clocks;
  pl["allocator"] = std::string(AllocatorName(p.allocator));
  j["runtime"] = {{"go", go}, {"preload", pl}};
  return j;
}

std::string RolloutHash(const ProfileSpec& spec) {
  Json j;
  j["tuning"] = TuningToJson(spec.tuning);
  j["steps"] = spec.rollout.steps;
  j["containers"] = spec.target_ref.containers;
  j["target"] = spec.target_ref.name;
  return Fnv1aHex(j.dump());
}

void SetCondition(std::vector<Condition>& conditions, absl::string_view type,
                  absl::string_view status, absl::string_view reason, absl::string_view message,
                  int64_t generation, absl::Time now) {
  for (Condition& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = now;
    c.status = std::string(status);
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = generation;
    return;
  }
  conditions.push_back(Condition{std::string(type), std::string(status), std::string(reason),
                                 std::string(message), generation, now});
}

const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::string Fnv1aHex(absl::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = kHex[h & 0xf];
    h >>= 4;
  }
  return out;
}

}  // namespace booster::rollout
