#include "operator/rollout/go_facts.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "operator/rollout/pod_template.h"

namespace booster::rollout {
namespace {

// An env entry of `container`: nullptr when absent.
const Json* EnvEntry(const Json& container, absl::string_view name) {
  if (!container.is_object() || !container.contains("env") || !container["env"].is_array()) {
    return nullptr;
  }
  const Json* found = nullptr;
  for (const Json& e : container["env"]) {  // the last entry of a name is the one in force
    if (e.is_object() && e.value("name", "") == name) found = &e;
  }
  return found;
}

// The value of the env entry (nullopt: from valueFrom, or not a string); "" for an absent
// entry is told apart by `present`.
std::optional<std::string> EnvValue(const Json& container, absl::string_view name,
                                    bool* present) {
  const Json* e = EnvEntry(container, name);
  *present = e != nullptr;
  if (e == nullptr) return std::string();
  if (e->contains("valueFrom")) return std::nullopt;
  const Json v = e->value("value", Json(""));
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

// containermaxprocs in a GODEBUG list ("a=1,containermaxprocs=0"): the last setting wins.
std::optional<bool> ContainerMaxProcs(absl::string_view godebug) {
  std::optional<bool> on;
  for (absl::string_view kv : absl::StrSplit(godebug, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.first == "containermaxprocs") on = p.second != "0";
  }
  return on;
}

std::optional<int64_t> CpuLimitMillis(const Json& container) {
  Json::json_pointer p("/resources/limits/cpu");
  if (!container.contains(p)) return std::nullopt;
  const Json& v = container.at(p);
  if (v.is_string()) return ParseCpuMillis(v.get<std::string>());
  if (v.is_number()) return ParseCpuMillis(v.dump());
  return std::nullopt;
}

bool IsBoosters(const std::string& name) {
  return name == kAgentContainer || name == kInstallContainer;
}

const Json* ContainerNamed(const Json& pod_template, const std::string& name) {
  Json::json_pointer p("/spec/containers");
  if (!pod_template.contains(p) || !pod_template.at(p).is_array()) return nullptr;
  for (const Json& c : pod_template.at(p)) {
    if (c.is_object() && c.value("name", "") == name) return &c;
  }
  return nullptr;
}

std::optional<int> GoMinorVersionOf(absl::string_view version);

// Whether the Go program in `container` lowers GOMAXPROCS to the CPU limit (Go 1.25+, and
// GODEBUG containermaxprocs not 0: the container's GODEBUG over the binary's default);
// nullopt when not known (no version, a GODEBUG from valueFrom).
std::optional<bool> CgroupRule(const Json& container, const GoFacts& facts) {
  std::optional<int> minor = GoMinorVersionOf(facts.version);
  if (!minor) return std::nullopt;
  if (*minor < 25) return false;
  bool present = false;
  std::optional<std::string> env = EnvValue(container, "GODEBUG", &present);
  if (!env) return std::nullopt;
  std::optional<bool> on = ContainerMaxProcs(facts.default_godebug);
  if (std::optional<bool> from_env = ContainerMaxProcs(*env)) on = from_env;
  return on.value_or(true);
}

std::optional<int> GoMinorVersionOf(absl::string_view version) {
  if (!absl::ConsumePrefix(&version, "go1.")) return std::nullopt;
  size_t digits = 0;
  while (digits < version.size() && version[digits] >= '0' && version[digits] <= '9') ++digits;
  int minor = 0;
  if (digits == 0 || digits > 4 || !absl::SimpleAtoi(version.substr(0, digits), &minor)) {
    return std::nullopt;
  }
  return minor;
}

}  // namespace

std::optional<int> GoMinorVersion(absl::string_view version) {
  return GoMinorVersionOf(version);
}

std::optional<int> GoDefaultMaxProcs(const Json& container, const GoFacts& facts) {
  if (facts.cpus <= 0) return std::nullopt;
  std::optional<bool> rule = CgroupRule(container, facts);
  if (!rule) return std::nullopt;
  std::optional<int64_t> limit = CpuLimitMillis(container);
  if (!*rule || !limit || *limit <= 0) return facts.cpus;
  const int64_t rounded_up = std::max<int64_t>(2, (*limit + 999) / 1000);
  return static_cast<int>(std::min<int64_t>(facts.cpus, rounded_up));
}

std::optional<int> GoMaxProcsIn(const Json& container, const GoFacts& facts) {
  bool present = false;
  std::optional<std::string> env = EnvValue(container, "GOMAXPROCS", &present);
  if (!env) return std::nullopt;
  if (!present || env->empty()) return GoDefaultMaxProcs(container, facts);
  int n = 0;
  if (!absl::SimpleAtoi(*env, &n) || n <= 0) return std::nullopt;
  return n;
}

std::string ProgramKey(const Json& pod_template) {
  std::vector<std::string> parts;
  Json::json_pointer p("/spec/containers");
  if (!pod_template.is_object() || !pod_template.contains(p) || !pod_template.at(p).is_array()) {
    return "";
  }
  for (const Json& c : pod_template.at(p)) {
    if (!c.is_object()) continue;
    const std::string name = c.value("name", "");
    if (IsBoosters(name)) continue;
    const Json image = c.value("image", Json(""));
    parts.push_back(absl::StrCat(name, "=", image.is_string() ? image.get<std::string>() : ""));
  }
  return absl::StrJoin(parts, ",");
}

std::string GoMaxProcsNoOp(const Json& base, const Json& tuned,
                           const std::vector<std::string>& containers, const GoFacts& facts) {
  Json::json_pointer p("/spec/containers");
  if (!tuned.contains(p) || !tuned.at(p).is_array()) return "";
  std::vector<std::string> same;
  bool set_differently = false;
  int value = 0;
  for (const Json& c : tuned.at(p)) {
    if (!c.is_object()) continue;
    const std::string name = c.value("name", "");
    if (IsBoosters(name)) continue;
    if (!containers.empty() && std::find(containers.begin(), containers.end(), name) ==
                                   containers.end()) {
      continue;
    }
    const Json* b = ContainerNamed(base, name);
    if (b == nullptr) return "";
    std::optional<int> before = GoMaxProcsIn(*b, facts);
    std::optional<int> after = GoMaxProcsIn(c, facts);
    if (!before || !after || *before != *after) return "";
    const Json* eb = EnvEntry(*b, "GOMAXPROCS");
    const Json* ea = EnvEntry(c, "GOMAXPROCS");
    if ((eb == nullptr) != (ea == nullptr) || (eb != nullptr && *eb != *ea)) {
      set_differently = true;
    }
    same.push_back(name);
    value = *after;
  }
  if (same.empty() || !set_differently) return "";
  const Json& first = *ContainerNamed(base, same.front());
  std::string why;
  if (const Json* e = EnvEntry(first, "GOMAXPROCS"); e != nullptr && e->value("value", "") != "") {
    why = "the container's own GOMAXPROCS";
  } else if (std::optional<int64_t> limit = CpuLimitMillis(first);
             limit && *limit > 0 && CgroupRule(first, facts).value_or(false)) {
    why = absl::StrCat("Go 1.25+ sets it from the CPU limit ", *limit,
                       "m, rounded up, at least 2, at most the ", facts.cpus,
                       " CPUs it may use");
  } else {
    why = absl::StrCat("Go's own default: the ", facts.cpus, " CPUs it may use");
  }
  return absl::StrCat("GOMAXPROCS ", value, " is what the ", facts.version,
                      " program already runs with in container", same.size() > 1 ? "s " : " ",
                      absl::StrJoin(same, ", "), " (", why, "): the knob changes nothing here");
}

std::string TuningGoMaxProcsNoOp(const Json& target_template, const Tuning& before,
                                 const Tuning& after, const EnrollContext& ctx,
                                 const MutationOptions& opts, const GoFacts& facts) {
  const Json team = TeamTemplate(target_template, opts);
  absl::StatusOr<Json> a = TunedTemplate(team, before, kArmCanary, ctx, opts);
  absl::StatusOr<Json> b = TunedTemplate(team, after, kArmCanary, ctx, opts);
  if (!a.ok() || !b.ok()) return "";
  return GoMaxProcsNoOp(*a, *b, ctx.containers, facts);
}

}  // namespace booster::rollout
