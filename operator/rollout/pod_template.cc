#include "operator/rollout/pod_template.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/allocator.h"
#include "common/go_runtime.h"
#include "operator/rollout/profile/hash.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/time_text.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {
namespace {

Json& Child(Json& parent, const char* key, Json empty) {
  if (!parent.contains(key) || parent[key].is_null()) parent[key] = std::move(empty);
  return parent[key];
}

std::string NameOf(const Json& item) {
  if (!item.is_object()) return "";
  auto it = item.find("name");
  return it != item.end() && it->is_string() ? it->get<std::string>() : "";
}

// obj[key] when obj is an object and that is a string / a bool; "" / false otherwise. The
// layer's record is an annotation anyone can edit: it is read only through these.
std::string StrAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}
bool BoolAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

// Replaces the element of `array` with item's name in place, or appends it.
void UpsertByName(Json& array, Json item) {
  const std::string name = NameOf(item);
  for (Json& e : array) {
    if (NameOf(e) == name) {
      e = std::move(item);
      return;
    }
  }
  array.push_back(std::move(item));
}

// Removes the element named `name` from parent[key]; drops the key when that left the
// list empty. Returns whether something was removed.
bool RemoveByName(Json& parent, const char* key, absl::string_view name) {
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array()) return false;
  Json& array = parent[key];
  bool removed = false;
  for (auto it = array.begin(); it != array.end();) {
    if (NameOf(*it) == name) {
      it = array.erase(it);
      removed = true;
    } else {
      ++it;
    }
  }
  if (removed && array.empty()) parent.erase(key);
  return removed;
}

bool RemoveKey(Json& parent, const char* map_key, const char* key) {
  if (!parent.is_object() || !parent.contains(map_key) || !parent[map_key].is_object()) {
    return false;
  }
  Json& map = parent[map_key];
  if (map.erase(key) == 0) return false;
  if (map.empty()) parent.erase(map_key);
  return true;
}

const Json* EnvEntry(const Json& container, absl::string_view name) {
  auto it = container.find("env");
  if (it == container.end() || !it->is_array()) return nullptr;
  for (const Json& e : *it) {
    if (NameOf(e) == name) return &e;
  }
  return nullptr;
}

Json FieldEnv(const char* name, const char* path) {
  return Json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

std::string MetaString(const Json& tmpl, const char* map, const char* key) {
  if (!tmpl.is_object() || !tmpl.contains("metadata")) return "";
  const Json& meta = tmpl["metadata"];
  if (!meta.is_object() || !meta.contains(map) || !meta[map].is_object()) return "";
  auto it = meta[map].find(key);
  return it != meta[map].end() && it->is_string() ? it->get<std::string>() : "";
}

// Everything Booster writes into the team's own parts of a template goes through a Layer,
// which records the value written and the one it replaced, so TeamTemplate can undo that
// exact change on a later version of the template (kLayerAnnotation). The record:
//   {"env": {"<container>": {"<NAME>": {"set": "<value>", "was": <the team's entry>}}},
//    "sysctls": {"<name>": {"set": "<value>", "was": <the team's entry>}},
//    "shareProcessNamespace": "added" | "false", "securityContext": "added"}
// "was" is absent where the team had no such entry.
class Layer {
 public:
  explicit Layer(Json record = Json::object()) : record_(std::move(record)) {}

  void Env(Json& container, const std::string& name, const std::string& value) {
    Json& env = Child(container, "env", Json::array());
    Json entry = {{"name", name}, {"value", value}};
    Json& rec = record_["env"][NameOf(container)][name];
    for (Json& e : env) {
      if (NameOf(e) != name) continue;
      if (!rec.contains("set") && !rec.contains("was")) rec["was"] = e;  // the team's
      rec["set"] = value;
      e = std::move(entry);
      return;
    }
    rec["set"] = value;
    env.push_back(std::move(entry));
  }

  void Sysctl(Json& pod_spec, const std::string& name, const std::string& value) {
    if (!pod_spec.contains("securityContext") || pod_spec["securityContext"].is_null()) {
      pod_spec["securityContext"] = Json::object();
      record_["securityContext"] = "added";
    }
    Json& sysctls = Child(pod_spec["securityContext"], "sysctls", Json::array());
    Json& rec = record_["sysctls"][name];
    for (Json& e : sysctls) {
      if (NameOf(e) != name) continue;
      if (!rec.contains("set") && !rec.contains("was")) rec["was"] = e;  // the team's entry
      rec["set"] = value;
      e = Json{{"name", name}, {"value", value}};
      return;
    }
    rec["set"] = value;
    sysctls.push_back(Json{{"name", name}, {"value", value}});
  }

  void SharePids(Json& pod_spec) {
    if (BoolAt(pod_spec, "shareProcessNamespace")) return;
    // "added": the team's template had no such field; "false": it said false.
    record_["shareProcessNamespace"] = pod_spec.contains("shareProcessNamespace") ? "false" : "added";
    pod_spec["shareProcessNamespace"] = true;
  }

  const Json& record() const { return record_; }

  // Writes the record into the template's annotations (none when nothing was recorded).
  void Seal(Json& tmpl) const {
    if (record_.empty()) return;
    Child(Child(tmpl, "metadata", Json::object()), "annotations",
          Json::object())[kLayerAnnotation] = record_.dump();
  }

 private:
  Json record_;
};

// The app containers the runtime library and knobs go to, in template order.
absl::StatusOr<std::vector<size_t>> SelectContainers(const Json& tmpl, const EnrollContext& ctx) {
  const Json* spec = tmpl.is_object() && tmpl.contains("spec") ? &tmpl["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object() || !spec->contains("containers") ||
      !(*spec)["containers"].is_array() || (*spec)["containers"].empty()) {
    return absl::InvalidArgumentError("the pod template has no containers");
  }
  const Json& containers = (*spec)["containers"];
  std::vector<size_t> out;
  std::set<std::string> present;
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string name = NameOf(containers[i]);
    if (name.empty()) return absl::InvalidArgumentError("a container of the template has no name");
    if (name == kAgentContainer) continue;
    present.insert(name);
    if (ctx.containers.empty() ||
        std::find(ctx.containers.begin(), ctx.containers.end(), name) != ctx.containers.end()) {
      out.push_back(i);
    }
  }
  for (const std::string& want : ctx.containers) {
    if (present.count(want) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("spec.targetRef.containers names \"", want,
                                                     "\", which the Deployment does not have (",
                                                     absl::StrJoin(present, ", "), ")"));
    }
  }
  return out;
}

// LD_PRELOAD of a container whose tuning chains allocator `name` in front of the
// library: the allocator first, so its malloc is the one every other object binds to.
std::string AllocatorPreload(absl::string_view name, const MutationOptions& opts) {
  return absl::StrCat(opts.mount_path, "/", AllocatorFileName(name), ":", opts.LibraryPath());
}

// Whether the enrolled container got the runtime library (containers that set their own
// LD_PRELOAD are left alone).
bool HasPreload(const Json& container, const MutationOptions& opts) {
  const Json* e = EnvEntry(container, "LD_PRELOAD");
  if (e == nullptr) return false;
  const std::string v = StrAt(*e, "value");
  if (v == opts.LibraryPath()) return true;
  // An allocator chained in front (ChainAllocator): <mount>/<allocator file>:<library>.
  for (absl::string_view name : {"jemalloc", "mimalloc", "tcmalloc"}) {
    if (v == AllocatorPreload(name, opts)) return true;
  }
  return false;
}

// Non-root, no capabilities, no privilege escalation, read-only root, the runtime's
// default seccomp profile: the Kubernetes "restricted" Pod Security Standard.
Json RestrictedSecurityContext(const MutationOptions& opts) {
  return Json{{"allowPrivilegeEscalation", false},
              {"readOnlyRootFilesystem", true},
              {"runAsNonRoot", true},
              {"runAsUser", opts.agent_user},
              {"runAsGroup", opts.agent_user},
              {"seccompProfile", {{"type", "RuntimeDefault"}}},
              {"capabilities", {{"drop", Json::array({"ALL"})}}}};
}

// What the agent needs to know of the app container it measures and places (the first
// selected one): its limits, which the agent cannot read from inside the pod (its own
// cgroup namespace), and the user its processes run as.
struct AppFacts {
  std::optional<int64_t> cpu_limit_millis;
  std::optional<int64_t> memory_limit_bytes;
  std::optional<int64_t> run_as_user;  // the container's securityContext, else the pod's
  std::optional<int64_t> run_as_group;
  bool places_threads = false;  // the tuning asks for cpu.placement or cpu.numa
};

AppFacts AppFactsOf(const Json& tmpl, const std::vector<size_t>& selected, const Tuning* tuning) {
  AppFacts f;
  f.places_threads = tuning != nullptr && (tuning->placement != CpuPlacement::kNone ||
                                           tuning->numa != NumaPolicy::kNone);
  const Json& spec = tmpl["spec"];
  if (selected.empty()) return f;
  const Json& c = spec["containers"][selected.front()];
  auto limit = [&](const char* resource) -> std::string {
    const Json* v = nullptr;
    if (c.contains("resources") && c["resources"].is_object() &&
        c["resources"].contains("limits") && c["resources"]["limits"].is_object() &&
        c["resources"]["limits"].contains(resource)) {
      v = &c["resources"]["limits"][resource];
    }
    if (v == nullptr) return "";
    return v->is_string() ? v->get<std::string>() : v->is_number() ? v->dump() : "";
  };
  f.cpu_limit_millis = ParseCpuMillis(limit("cpu"));
  f.memory_limit_bytes = ParseBytes(limit("memory"));
  auto id = [&](const char* field) -> std::optional<int64_t> {
    for (const Json* sc : {c.contains("securityContext") ? &c["securityContext"] : nullptr,
                           spec.contains("securityContext") ? &spec["securityContext"] : nullptr}) {
      if (sc != nullptr && sc->is_object() && sc->contains(field) &&
          (*sc)[field].is_number_integer()) {
        return (*sc)[field].get<int64_t>();
      }
    }
    return std::nullopt;
  };
  f.run_as_user = id("runAsUser");
  f.run_as_group = id("runAsGroup");
  return f;
}

// The agent's privilege. Observing needs none. Placing the app's threads from outside
// (sched_setaffinity; libbooster.so cannot reach a static binary, nor threads started
// before its control page) needs the app's own user or CAP_SYS_NICE. A capability added
// to a non-root container is not effective (no ambient capabilities: measured on the e2e
// node, CapEff 0), so: the app's user when the template names it (no capability; stays
// within the "restricted" Pod Security Standard when that user is not root), else root
// with every capability dropped but SYS_NICE (outside "baseline" and "restricted").
Json AgentSecurityContext(const MutationOptions& opts, const AppFacts& app) {
  Json sc = RestrictedSecurityContext(opts);
  if (!app.places_threads) return sc;
  if (app.run_as_user.has_value()) {
    sc["runAsUser"] = *app.run_as_user;
    // The app's group too (0, the runtime's default for a numeric user, when the template
    // names none): reading the app's /proc/<pid>/maps — how the agent tells whether
    // libbooster.so is loaded — needs ptrace-read access, which compares user and group.
    sc["runAsGroup"] = app.run_as_group.value_or(0);
    sc["runAsNonRoot"] = *app.run_as_user != 0;
    return sc;
  }
  sc["runAsUser"] = 0;
  sc["runAsNonRoot"] = false;
  sc["capabilities"]["add"] = Json::array({"SYS_NICE"});
  return sc;
}

Json AgentContainer(absl::string_view arm, absl::string_view mode, const EnrollContext& ctx,
                    const MutationOptions& opts, const std::string& tuning_json,
                    const Json& resources, const AppFacts& app) {
  Json env = Json::array();
  env.push_back({{"name", "BOOSTER_ARM"}, {"value", std::string(arm)}});
  env.push_back({{"name", "BOOSTER_AGENT_MODE"}, {"value", std::string(mode)}});
  env.push_back(
      {{"name", "BOOSTER_PROFILE"}, {"value", ctx.profile_namespace + "/" + ctx.profile_name}});
  env.push_back({{"name", "BOOSTER_CONTROL"}, {"value", opts.ControlPath()}});
  if (!opts.operator_ca_pem.empty()) {
    env.push_back({{"name", "BOOSTER_OPERATOR"}, {"value", opts.operator_address}});
    env.push_back({{"name", "BOOSTER_OPERATOR_CA"}, {"value", opts.operator_ca_pem}});
  }
  env.push_back({{"name", "BOOSTER_TOKEN_FILE"}, {"value", opts.token_mount_path + "/token"}});
  if (!ctx.window.empty()) env.push_back({{"name", "BOOSTER_WINDOW"}, {"value", ctx.window}});
  if (!ctx.app_metrics.empty()) {
    env.push_back({{"name", "BOOSTER_APP_METRICS"}, {"value", ctx.app_metrics}});
  }
  if (!tuning_json.empty()) env.push_back({{"name", "BOOSTER_TUNING"}, {"value", tuning_json}});
  if (app.cpu_limit_millis.value_or(0) > 0) {
    env.push_back(
        {{"name", "BOOSTER_TARGET_CPU_LIMIT"}, {"value", absl::StrCat(*app.cpu_limit_millis)}});
  }
  if (app.memory_limit_bytes.value_or(0) > 0) {
    env.push_back({{"name", "BOOSTER_TARGET_MEMORY_LIMIT"},
                   {"value", absl::StrCat(*app.memory_limit_bytes)}});
  }
  env.push_back(FieldEnv("POD_NAME", "metadata.name"));
  env.push_back(FieldEnv("POD_NAMESPACE", "metadata.namespace"));
  env.push_back(FieldEnv("POD_UID", "metadata.uid"));
  env.push_back(FieldEnv("NODE_NAME", "spec.nodeName"));
  // The template the agent's windows ran under; from the pod's own annotation, since a
  // literal would change the hash it names.
  {
    static const std::string kHashField =
        absl::StrCat("metadata.annotations['", kTemplateHashAnnotation, "']");
    env.push_back(FieldEnv("BOOSTER_TEMPLATE_HASH", kHashField.c_str()));
  }
  if (!opts.agent_crash_at.empty()) {
    env.push_back({{"name", "BOOSTER_TEST_CRASH_AT"}, {"value", opts.agent_crash_at}});
  }
  if (!ctx.containers.empty()) {
    env.push_back({{"name", "BOOSTER_CONTAINERS"}, {"value", absl::StrJoin(ctx.containers, ",")}});
  }
  Json args = opts.agent_args;
  args.push_back(absl::StrCat("--metrics-address=0.0.0.0:", opts.agent_port));
  Json c = {
      {"name", kAgentContainer},
      {"image", opts.agent_image},
      {"imagePullPolicy", opts.image_pull_policy},
      {"args", args},
      {"env", env},
      {"ports", Json::array({{{"name", opts.agent_port_name},
                              {"containerPort", opts.agent_port},
                              {"protocol", "TCP"}}})},
      // Liveness only: a readiness probe on the sidecar would take the app's pod out of
      // its Service whenever the agent is unwell. A hung agent is restarted; it reverts
      // its journal on start.
      {"livenessProbe",
       {{"httpGet", {{"path", "/healthz"}, {"port", opts.agent_port_name}}},
        {"periodSeconds", 10},
        {"timeoutSeconds", 2},
        {"failureThreshold", 3}}},
      {"resources", resources},
      {"volumeMounts", Json::array({{{"name", opts.volume_name}, {"mountPath", opts.mount_path}},
                                    {{"name", opts.token_volume_name},
                                     {"mountPath", opts.token_mount_path},
                                     {"readOnly", true}}})},
      {"securityContext", AgentSecurityContext(opts, app)}};
  return c;
}

Json InstallContainer(const MutationOptions& opts, const Json& resources) {
  return Json{
      {"name", kInstallContainer},
      {"image", opts.agent_image},
      {"imagePullPolicy", opts.image_pull_policy},
      {"args", opts.install_args},
      {"resources", resources},
      {"volumeMounts", Json::array({{{"name", opts.volume_name}, {"mountPath", opts.mount_path}}})},
      {"securityContext", RestrictedSecurityContext(opts)}};
}

// The resources of Booster's containers that keep the original pod's QoS class.
Json SidecarResources(const Json& original, const MutationOptions& opts) {
  switch (PodQosClass(original)) {
    case QosClass::kBestEffort:
      return Json::object();
    case QosClass::kGuaranteed:
      return opts.agent_guaranteed_resources;
    case QosClass::kBurstable:
      break;
  }
  return opts.agent_resources;
}

// Sets the marker annotation to the hash of everything else in the template.
void Seal(Json& tmpl) {
  RemoveKey(tmpl["metadata"], "annotations", kTemplateHashAnnotation);
  std::string h = Fnv1aHex(tmpl.dump());
  Child(tmpl["metadata"], "annotations", Json::object())[kTemplateHashAnnotation] = h;
}

// The container's resources.<kind>.<resource> as text ("" when unset).
std::string Resource(const Json& container, const char* kind, const char* resource) {
  auto r = container.find("resources");
  if (r == container.end() || !r->is_object()) return "";
  auto l = r->find(kind);
  if (l == r->end() || !l->is_object()) return "";
  auto v = l->find(resource);
  if (v == l->end()) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number()) return v->dump();
  return "";
}
std::string Limit(const Json& container, const char* resource) {
  return Resource(container, "limits", resource);
}
std::string Request(const Json& container, const char* resource) {
  return Resource(container, "requests", resource);
}

// GOMAXPROCS and GOMEMLIMIT from the container's limits by the rule the agent's planner
// uses too (common/go_runtime.h): the whole cores of the CPU limit, at least 1; a share
// of the memory limit. The operator does not know the CPUs the pod will get, so without
// a CPU limit `auto` leaves GOMAXPROCS to Go.
void ApplyGo(Layer& layer, Json& c, const GoTuning& go) {
  if (go.gomaxprocs == "auto") {
    if (std::optional<int> n = GoMaxProcsFor(ParseCpuMillis(Limit(c, "cpu")), std::nullopt)) {
      layer.Env(c, "GOMAXPROCS", absl::StrCat(*n));
    }
  } else if (!go.gomaxprocs.empty()) {
    layer.Env(c, "GOMAXPROCS", go.gomaxprocs);
  }
  if (!go.gomemlimit.empty()) {
    if (std::optional<int> percent = GoMemLimitPercent(go.gomemlimit)) {
      if (std::optional<int64_t> bytes =
              GoMemLimitBytes(ParseBytes(Limit(c, "memory")), *percent)) {
        layer.Env(c, "GOMEMLIMIT", absl::StrCat(*bytes));
      }
    } else {
      layer.Env(c, "GOMEMLIMIT", go.gomemlimit);
    }
  }
  if (!go.gogc.empty()) layer.Env(c, "GOGC", go.gogc);
}

// The runtime library's standalone knobs (runtime/config.h, ConfigFromEnv): in force until
// the agent publishes a control page, and the fallback when it cannot.
void ApplyPreload(Layer& layer, Json& c, const Tuning& t) {
  const PreloadTuning& p = t.preload;
  if (p.listen_backlog) layer.Env(c, "BOOSTER_LISTEN_BACKLOG", absl::StrCat(*p.listen_backlog));
  if (p.tcp_no_delay.value_or(false)) layer.Env(c, "BOOSTER_TCP_NODELAY", "1");
  if (p.tcp_quick_ack.value_or(false)) layer.Env(c, "BOOSTER_TCP_QUICKACK", "1");
  if (p.busy_poll_us) layer.Env(c, "BOOSTER_BUSY_POLL", absl::StrCat(*p.busy_poll_us));
  if (p.receive_buffer_bytes) {
    layer.Env(c, "BOOSTER_RCVBUF", absl::StrCat(*p.receive_buffer_bytes));
  }
  if (p.send_buffer_bytes) layer.Env(c, "BOOSTER_SNDBUF", absl::StrCat(*p.send_buffer_bytes));
  if (p.coarse_clocks.value_or(false)) layer.Env(c, "BOOSTER_CLOCK", "coarse");
  switch (t.placement) {
    case CpuPlacement::kNone:
      break;
    case CpuPlacement::kPinned:
      layer.Env(c, "BOOSTER_THREADS", "pin");
      break;
    case CpuPlacement::kSpread:
    case CpuPlacement::kWholeCores:
      layer.Env(c, "BOOSTER_THREADS", "confine");
      break;
  }
  switch (t.numa) {
    case NumaPolicy::kNone:
      break;
    case NumaPolicy::kPreferred:
    case NumaPolicy::kAlign:
      layer.Env(c, "BOOSTER_NUMA", "preferred");
      break;
    case NumaPolicy::kBind:
      layer.Env(c, "BOOSTER_NUMA", "bind");
      break;
  }
}

}  // namespace

EnrollContext EnrollContextFor(const std::string& ns, const std::string& name,
                               const ProfileSpec& spec) {
  EnrollContext ctx{ns, name, spec.target_ref.containers};
  ctx.window = FormatGoDuration(spec.rollout.analysis.interval);
  if (!spec.rollout.analysis.source.empty()) ctx.app_metrics = spec.rollout.analysis.source.dump();
  return ctx;
}

namespace {

// Names of Booster's own parts that a team's template must not use already.
absl::Status CheckNoNameClash(const Json& team, const MutationOptions& opts) {
  const Json& spec = team["spec"];
  auto clash = [&](const char* list, absl::string_view name) -> bool {
    if (!spec.contains(list) || !spec[list].is_array()) return false;
    for (const Json& e : spec[list]) {
      if (NameOf(e) == name) return true;
    }
    return false;
  };
  for (const auto& [list, name, what] :
       {std::tuple<const char*, std::string, const char*>{"containers", kAgentContainer,
                                                           "a container"},
        {"initContainers", kInstallContainer, "an init container"},
        {"volumes", opts.volume_name, "a volume"},
        {"volumes", opts.token_volume_name, "a volume"}}) {
    if (clash(list, name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the pod template already has ", what, " named \"", name,
                       "\", the name Booster's own part uses; rename it to enroll the Deployment"));
    }
  }
  return absl::OkStatus();
}

// The parts of a template Booster writes into must have the API's types (the API server
// never returns other ones; a malformed input gets an error, not an exception).
absl::Status CheckShape(const Json& t) {
  auto kind_of = [](const Json& parent, const char* key, bool object) {
    if (!parent.is_object() || !parent.contains(key) || parent[key].is_null()) return true;
    return object ? parent[key].is_object() : parent[key].is_array();
  };
  std::string bad;
  if (!kind_of(t, "metadata", true)) bad = "metadata";
  const Json* meta = t.contains("metadata") && t["metadata"].is_object() ? &t["metadata"] : nullptr;
  if (meta != nullptr && !kind_of(*meta, "labels", true)) bad = "metadata.labels";
  if (meta != nullptr && !kind_of(*meta, "annotations", true)) bad = "metadata.annotations";
  const Json& spec = t["spec"];
  for (const char* list : {"containers", "initContainers", "volumes"}) {
    if (!kind_of(spec, list, false)) bad = absl::StrCat("spec.", list);
  }
  if (!kind_of(spec, "securityContext", true)) bad = "spec.securityContext";
  if (spec.contains("securityContext") && spec["securityContext"].is_object() &&
      !kind_of(spec["securityContext"], "sysctls", false)) {
    bad = "spec.securityContext.sysctls";
  }
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (const Json& c : spec["containers"]) {
      if (!kind_of(c, "env", false) || !kind_of(c, "volumeMounts", false)) {
        bad = absl::StrCat("spec.containers[", NameOf(c), "]: env or volumeMounts");
      }
    }
  }
  if (bad.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the pod template's ", bad, " does not have the type the API defines"));
}

// The enrolled template of `team` (a template without a layer); what it writes into the
// team's parts is recorded in `layer`. Neither the record nor the marker is written yet.
absl::StatusOr<Json> Enroll(const Json& team, const EnrollContext& ctx,
                            const MutationOptions& opts, Layer& layer,
                            std::vector<size_t>* selected_out) {
  if (!team.is_object()) return absl::InvalidArgumentError("the pod template is not an object");
  absl::StatusOr<std::vector<size_t>> selected = SelectContainers(team, ctx);
  if (!selected.ok()) return selected.status();
  if (absl::Status s = CheckShape(team); !s.ok()) return s;
  if (absl::Status s = CheckNoNameClash(team, opts); !s.ok()) return s;
  Json t = team;
  Json& meta = Child(t, "metadata", Json::object());
  Child(meta, "labels", Json::object())[kArmLabel] = kArmBaseline;
  Child(meta, "annotations", Json::object())[kProfileAnnotation] =
      ctx.profile_namespace + "/" + ctx.profile_name;

  Json& spec = t["spec"];
  // The agent measures the app's processes through the pod's shared process namespace.
  layer.SharePids(spec);
  Json& volumes = Child(spec, "volumes", Json::array());
  volumes.push_back(Json{{"name", opts.volume_name}, {"emptyDir", Json::object()}});
  volumes.push_back(Json{{"name", opts.token_volume_name},
                         {"projected",
                          {{"sources", Json::array({{{"serviceAccountToken",
                                                      {{"audience", opts.token_audience},
                                                       {"expirationSeconds", 3600},
                                                       {"path", "token"}}}}})}}}});
  const Json resources = SidecarResources(team, opts);
  Child(spec, "initContainers", Json::array()).push_back(InstallContainer(opts, resources));

  Json& containers = spec["containers"];
  for (size_t i : *selected) {
    Json& c = containers[i];
    // A container that preloads a library of its own is left alone.
    const Json* preload = EnvEntry(c, "LD_PRELOAD");
    if (preload != nullptr) continue;
    layer.Env(c, "LD_PRELOAD", opts.LibraryPath());
    layer.Env(c, "BOOSTER_CONTROL", opts.ControlPath());
    UpsertByName(
        Child(c, "volumeMounts", Json::array()),
        Json{{"name", opts.volume_name}, {"mountPath", opts.mount_path}, {"readOnly", true}});
  }
  containers.push_back(AgentContainer(kArmBaseline, "observe", ctx, opts, "", resources,
                                      AppFactsOf(team, *selected, nullptr)));
  if (selected_out != nullptr) *selected_out = *std::move(selected);
  return t;
}

Json* FindNamed(Json& parent, const char* key, absl::string_view name) {
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array()) return nullptr;
  for (Json& e : parent[key]) {
    if (NameOf(e) == name) return &e;
  }
  return nullptr;
}
const Json* FindNamed(const Json& parent, const char* key, absl::string_view name) {
  return FindNamed(const_cast<Json&>(parent), key, name);
}

// The layer's record of a template, or null when it has none (or it is damaged).
Json RecordOf(const Json& tmpl) {
  const std::string text = MetaString(tmpl, "annotations", kLayerAnnotation);
  if (text.empty()) return nullptr;
  Json r = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return r.is_object() ? r : Json(nullptr);
}

// Undoes the recorded env entries of container `c`: Booster's value becomes the team's
// again, or goes; an entry someone changed or removed since is left as it is.
void UndoEnv(Json& c, const Json& recorded) {
  if (!recorded.is_object() || !c.contains("env") || !c["env"].is_array()) return;
  Json& env = c["env"];
  for (auto it = recorded.begin(); it != recorded.end(); ++it) {
    const Json& rec = it.value();
    if (!rec.is_object() || !rec.contains("set") || !rec["set"].is_string()) continue;
    const Json ours = {{"name", it.key()}, {"value", rec["set"]}};
    for (auto e = env.begin(); e != env.end(); ++e) {
      if (NameOf(*e) != it.key()) continue;
      if (*e == ours) {
        // A damaged record's "was" (not an entry of that name) is not written into the pod.
        if (rec.contains("was") && NameOf(rec["was"]) == it.key()) {
          *e = rec["was"];
        } else {
          env.erase(e);
        }
      }
      break;
    }
  }
  if (env.empty()) c.erase("env");
}

void UndoSysctls(Json& spec, const Json& recorded) {
  if (!recorded.is_object() || !spec.contains("securityContext")) return;
  Json& sc = spec["securityContext"];
  if (!sc.is_object() || !sc.contains("sysctls") || !sc["sysctls"].is_array()) return;
  Json& sysctls = sc["sysctls"];
  for (auto it = recorded.begin(); it != recorded.end(); ++it) {
    const Json& rec = it.value();
    if (!rec.is_object() || !rec.contains("set") || !rec["set"].is_string()) continue;
    for (auto e = sysctls.begin(); e != sysctls.end(); ++e) {
      if (NameOf(*e) != it.key()) continue;
      if (*e == Json{{"name", it.key()}, {"value", rec["set"]}}) {
        if (rec.contains("was") && NameOf(rec["was"]) == it.key()) {
          *e = rec["was"];
        } else {
          sysctls.erase(e);
        }
      }
      break;
    }
  }
  if (sysctls.empty()) sc.erase("sysctls");
}

// The record a template written before the layer record would have had, rebuilt from its
// agent's BOOSTER_TUNING and Booster's fixed values: only what Booster wrote is known,
// never what it replaced.
Json LegacyRecord(const Json& tmpl, const MutationOptions& opts) {
  Json rec = Json::object();
  if (!tmpl.contains("spec") || !tmpl["spec"].is_object()) return rec;
  const Json& spec = tmpl["spec"];
  if (!spec.contains("containers") || !spec["containers"].is_array()) return rec;
  std::optional<Tuning> tuning;
  if (std::optional<Json> j = TemplateTuning(tmpl)) {
    if (absl::StatusOr<Tuning> t = TuningFromJson(*j); t.ok()) tuning = *std::move(t);
  }
  for (const Json& c : spec["containers"]) {
    const std::string name = NameOf(c);
    if (name == kAgentContainer || !c.is_object()) continue;
    if (!HasPreload(c, opts) && EnvEntry(c, "BOOSTER_CONTROL") == nullptr) continue;
    Json& env = rec["env"][name];
    if (const Json* e = EnvEntry(c, "LD_PRELOAD"); e != nullptr && HasPreload(c, opts)) {
      env["LD_PRELOAD"]["set"] = StrAt(*e, "value");
    }
    env["BOOSTER_CONTROL"]["set"] = opts.ControlPath();
    if (tuning) {
      // What the tuning writes into this container, by the same rules.
      Layer scratch;
      Json copy = c;
      ApplyGo(scratch, copy, tuning->go);
      ApplyPreload(scratch, copy, *tuning);
      const Json& r = scratch.record();
      if (r.contains("env") && r["env"].contains(name)) {
        for (auto it = r["env"][name].begin(); it != r["env"][name].end(); ++it) {
          env[it.key()]["set"] = it.value()["set"];
        }
      }
    }
  }
  if (tuning) {
    for (const auto& [k, v] : tuning->sysctls) rec["sysctls"][k]["set"] = v;
  }
  if (MetaString(tmpl, "annotations", kSharedPidAnnotation) == "added") {
    rec["shareProcessNamespace"] = "added";
  }
  return rec;
}

std::string EnvValueText(const Json* e) {
  if (e == nullptr) return "missing";
  if (e->contains("value")) return absl::StrCat("\"", StrAt(*e, "value"), "\"");
  return "set from elsewhere (valueFrom)";
}

}  // namespace

absl::StatusOr<Json> EnrolledTemplate(const Json& tmpl, const EnrollContext& ctx,
                                      const MutationOptions& opts) {
  Layer layer;
  absl::StatusOr<Json> t = Enroll(TeamTemplate(tmpl, opts), ctx, opts, layer, nullptr);
  if (!t.ok()) return t.status();
  layer.Seal(*t);
  Seal(*t);
  return t;
}

absl::StatusOr<Json> TunedTemplate(const Json& tmpl, const Tuning& tuning, absl::string_view arm,
                                   const EnrollContext& ctx, const MutationOptions& opts) {
  const Json team = TeamTemplate(tmpl, opts);
  Layer layer;
  std::vector<size_t> selected;
  absl::StatusOr<Json> enrolled = Enroll(team, ctx, opts, layer, &selected);
  if (!enrolled.ok()) return enrolled.status();
  Json t = *std::move(enrolled);
  const Json tuning_json = TuningToJson(tuning);
  t["metadata"]["labels"][kArmLabel] = std::string(arm);
  t["metadata"]["annotations"][kTuningHashAnnotation] = Fnv1aHex(tuning_json.dump());
  Json& containers = t["spec"]["containers"];
  bool chain_allocator = false;
  for (size_t i : selected) {
    Json& c = containers[i];
    ApplyGo(layer, c, tuning.go);
    if (HasPreload(c, opts)) {
      ApplyPreload(layer, c, tuning);
      if (tuning.preload.allocator != Allocator::kDefault) {
        layer.Env(c, "LD_PRELOAD", AllocatorPreload(AllocatorName(tuning.preload.allocator), opts));
        chain_allocator = true;
      }
    }
  }
  // The install init container copies the allocator from the agent image into the
  // shared volume, beside the library.
  if (chain_allocator) {
    for (Json& ic : t["spec"]["initContainers"]) {
      if (NameOf(ic) != kInstallContainer) continue;
      ic["args"].push_back("--allocator");
      ic["args"].push_back(std::string(AllocatorName(tuning.preload.allocator)));
    }
  }
  UpsertByName(containers, AgentContainer(arm, "tune", ctx, opts, tuning_json.dump(),
                                          SidecarResources(team, opts),
                                          AppFactsOf(team, selected, &tuning)));
  for (const auto& [name, value] : tuning.sysctls) layer.Sysctl(t["spec"], name, value);
  layer.Seal(t);
  Seal(t);
  return t;
}

bool HasLayer(const Json& tmpl) {
  return !TemplateMarker(tmpl).empty() || !MetaString(tmpl, "annotations", kLayerAnnotation).empty();
}

Json TeamTemplate(const Json& tmpl, const MutationOptions& opts) {
  if (!tmpl.is_object() || !HasLayer(tmpl)) return tmpl;
  Json record = RecordOf(tmpl);
  if (record.is_null()) record = LegacyRecord(tmpl, opts);
  Json t = tmpl;
  if (t.contains("metadata") && t["metadata"].is_object()) {
    Json& meta = t["metadata"];
    RemoveKey(meta, "labels", kArmLabel);
    for (const char* key : {kProfileAnnotation, kTemplateHashAnnotation, kTuningHashAnnotation,
                            kLayerAnnotation, kSharedPidAnnotation}) {
      RemoveKey(meta, "annotations", key);
    }
    if (meta.empty()) t.erase("metadata");
  }
  if (!t.contains("spec") || !t["spec"].is_object()) return t;
  Json& spec = t["spec"];
  if (BoolAt(spec, "shareProcessNamespace")) {
    const std::string shared = StrAt(record, "shareProcessNamespace");
    if (shared == "added") spec.erase("shareProcessNamespace");
    if (shared == "false") spec["shareProcessNamespace"] = false;
  }
  RemoveByName(spec, "volumes", opts.volume_name);
  RemoveByName(spec, "volumes", opts.token_volume_name);
  RemoveByName(spec, "initContainers", kInstallContainer);
  RemoveByName(spec, "containers", kAgentContainer);
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (Json& c : spec["containers"]) {
      if (!c.is_object()) continue;
      if (record.contains("env") && record["env"].contains(NameOf(c))) {
        UndoEnv(c, record["env"][NameOf(c)]);
      }
      RemoveByName(c, "volumeMounts", opts.volume_name);
    }
  }
  if (record.contains("sysctls")) UndoSysctls(spec, record["sysctls"]);
  if (StrAt(record, "securityContext") == "added" && spec.contains("securityContext") &&
      spec["securityContext"].is_object() && spec["securityContext"].empty()) {
    spec.erase("securityContext");
  }
  return t;
}

std::vector<std::string> LayerDifferences(const Json& tmpl, const Json& want,
                                          const MutationOptions& opts) {
  std::vector<std::string> out;
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) {
    out.push_back("the pod template is missing");
    return out;
  }
  const Json& spec = tmpl["spec"];
  const Json& want_spec = want["spec"];
  for (const auto& [list, name, what] :
       {std::tuple<const char*, std::string, const char*>{"containers", kAgentContainer,
                                                           "container"},
        {"initContainers", kInstallContainer, "init container"},
        {"volumes", opts.volume_name, "volume"},
        {"volumes", opts.token_volume_name, "volume"}}) {
    if (FindNamed(want_spec, list, name) != nullptr && FindNamed(spec, list, name) == nullptr) {
      out.push_back(absl::StrCat(what, " ", name, " is missing"));
    }
  }
  for (const char* key : {kArmLabel}) {
    const std::string have = MetaString(tmpl, "labels", key);
    const std::string need = MetaString(want, "labels", key);
    if (have != need) {
      out.push_back(absl::StrCat("label ", key, " is ", have.empty() ? "missing" : have, ", not ",
                                 need.empty() ? "absent" : need));
    }
  }
  for (const char* key : {kTuningHashAnnotation, kProfileAnnotation}) {
    const std::string have = MetaString(tmpl, "annotations", key);
    const std::string need = MetaString(want, "annotations", key);
    if (have != need) {
      out.push_back(absl::StrCat("annotation ", key, " is ", have.empty() ? "missing" : have,
                                 ", not ", need.empty() ? "absent" : need));
    }
  }
  if (want_spec.contains("containers") && want_spec["containers"].is_array()) {
    for (const Json& wc : want_spec["containers"]) {
      const std::string name = NameOf(wc);
      if (name == kAgentContainer) continue;
      const Json* c = FindNamed(spec, "containers", name);
      if (FindNamed(wc, "volumeMounts", opts.volume_name) != nullptr &&
          (c == nullptr || FindNamed(*c, "volumeMounts", opts.volume_name) == nullptr)) {
        out.push_back(absl::StrCat("volume mount ", opts.volume_name, " of container ", name,
                                   " is missing"));
      }
    }
  }
  const Json record = RecordOf(want);
  if (record.is_object() && record.contains("env") && record["env"].is_object()) {
    for (auto ci = record["env"].begin(); ci != record["env"].end(); ++ci) {
      const Json* c = FindNamed(spec, "containers", ci.key());
      if (!ci.value().is_object()) continue;
      for (auto it = ci.value().begin(); it != ci.value().end(); ++it) {
        const std::string set = StrAt(it.value(), "set");
        const Json* e = c == nullptr ? nullptr : EnvEntry(*c, it.key());
        if (e != nullptr && *e == Json{{"name", it.key()}, {"value", set}}) continue;
        out.push_back(absl::StrCat("env ", it.key(), " of container ", ci.key(), " is ",
                                   EnvValueText(e), ", not \"", set, "\""));
      }
    }
  }
  if (record.is_object() && record.contains("sysctls") && record["sysctls"].is_object()) {
    const Json* sc = spec.contains("securityContext") ? &spec["securityContext"] : nullptr;
    for (auto it = record["sysctls"].begin(); it != record["sysctls"].end(); ++it) {
      const std::string set = StrAt(it.value(), "set");
      const Json* e = sc == nullptr ? nullptr : FindNamed(*sc, "sysctls", it.key());
      if (e != nullptr && StrAt(*e, "value") == set) continue;
      out.push_back(absl::StrCat("sysctl ", it.key(), " is ",
                                 e == nullptr ? std::string("missing")
                                              : absl::StrCat("\"", StrAt(*e, "value"), "\""),
                                 ", not \"", set, "\""));
    }
  }
  if (BoolAt(want_spec, "shareProcessNamespace") && !BoolAt(spec, "shareProcessNamespace")) {
    out.push_back("shareProcessNamespace is not true");
  }
  return out;
}

std::optional<Json> TemplateTuning(const Json& tmpl) {
  if (!tmpl.is_object() || !tmpl.contains("spec")) return std::nullopt;
  const Json* agent = FindNamed(tmpl["spec"], "containers", kAgentContainer);
  if (agent == nullptr) return std::nullopt;
  const Json* e = EnvEntry(*agent, "BOOSTER_TUNING");
  if (e == nullptr || !e->contains("value") || !(*e)["value"].is_string()) return std::nullopt;
  Json j = Json::parse((*e)["value"].get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

bool IsEnrolled(const Json& tmpl) {
  if (TemplateMarker(tmpl).empty()) return false;
  const Json* spec = tmpl.contains("spec") ? &tmpl["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object() || !spec->contains("containers") ||
      !(*spec)["containers"].is_array()) {
    return false;
  }
  for (const Json& c : (*spec)["containers"]) {
    if (NameOf(c) == kAgentContainer) return true;
  }
  return false;
}


std::string TemplateArm(const Json& tmpl) { return MetaString(tmpl, "labels", kArmLabel); }

bool AgentSettingsDiffer(const Json& tmpl, const Json& want) {
  auto agent = [](const Json& t) -> const Json* {
    if (!t.is_object() || !t.contains("spec") || !t["spec"].is_object()) return nullptr;
    return FindNamed(t["spec"], "containers", kAgentContainer);
  };
  const Json* have = agent(tmpl);
  const Json* need = agent(want);
  if (have == nullptr || need == nullptr) return false;
  for (const char* name : {"BOOSTER_WINDOW", "BOOSTER_APP_METRICS"}) {
    const Json* a = EnvEntry(*have, name);
    const Json* b = EnvEntry(*need, name);
    if ((a == nullptr) != (b == nullptr)) return true;
    if (a != nullptr && StrAt(*a, "value") != StrAt(*b, "value")) return true;
  }
  return false;
}

Json FreshBaselineTemplate(const Json& baseline, const Json& canary) {
  Json tmpl = baseline;
  Json& labels = Child(Child(tmpl, "metadata", Json::object()), "labels", Json::object());
  labels[kFreshBaselineLabel] = "true";
  // The baseline arm, also when the target runs a tuning this profile promoted (arm
  // promoted): the Deployment's selector asks for it, and the agents report as that arm.
  labels[kArmLabel] = kArmBaseline;
  if (tmpl.contains("spec") && tmpl["spec"].is_object() && tmpl["spec"].contains("containers") &&
      tmpl["spec"]["containers"].is_array()) {
    for (Json& c : tmpl["spec"]["containers"]) {
      if (!c.is_object() || c.value("name", "") != kAgentContainer || !c.contains("env") ||
          !c["env"].is_array()) {
        continue;
      }
      for (Json& e : c["env"]) {
        if (e.is_object() && e.value("name", "") == "BOOSTER_ARM") e["value"] = kArmBaseline;
      }
    }
  }
  Json match = Json::object();
  if (canary.is_object() && canary.contains("metadata") && canary["metadata"].is_object() &&
      canary["metadata"].contains("labels") && canary["metadata"]["labels"].is_object()) {
    match = canary["metadata"]["labels"];
  }
  // Pairs: each node draws a baseline pod by its canary pods (weight 100 each) and repels it
  // by the baseline pods already there. The scheduler counts a preferred term both ways (the
  // incoming pod's term over the pods there, and their terms over the incoming pod), so the
  // anti-affinity's 50 weighs 100 per baseline pod: the node with the most canary pods not
  // yet matched by a baseline pod scores highest.
  const Json own = tmpl["metadata"]["labels"];
  auto term = [](const Json& selector, int weight) {
    return Json{{"weight", weight},
                {"podAffinityTerm",
                 {{"labelSelector", {{"matchLabels", selector}}},
                  {"topologyKey", "kubernetes.io/hostname"}}}};
  };
  Json& spec = Child(tmpl, "spec", Json::object());
  Json& affinity = Child(spec, "affinity", Json::object());
  auto preferred = [&](const char* kind) -> Json& {
    return Child(Child(affinity, kind, Json::object()),
                 "preferredDuringSchedulingIgnoredDuringExecution", Json::array());
  };
  preferred("podAffinity").push_back(term(match, 100));
  preferred("podAntiAffinity").push_back(term(own, 50));
  Seal(tmpl);
  return tmpl;
}

std::string TemplateMarker(const Json& tmpl) {
  return MetaString(tmpl, "annotations", kTemplateHashAnnotation);
}

std::string TemplateHash(const Json& tmpl) { return Fnv1aHex(tmpl.dump()); }

namespace {
// Splits "1.5Gi" into the number and the suffix; parses the number with an optional
// decimal exponent ("1e9"). Returns nullopt for anything else.
std::optional<std::pair<double, absl::string_view>> SplitQuantity(absl::string_view q) {
  q = absl::StripAsciiWhitespace(q);
  size_t i = 0;
  if (i < q.size() && (q[i] == '+')) ++i;
  size_t digits = i;
  while (i < q.size() && (absl::ascii_isdigit(q[i]) || q[i] == '.')) ++i;
  if (i == digits) return std::nullopt;
  absl::string_view number = q.substr(0, i);
  absl::string_view suffix = q.substr(i);
  int exponent = 0;
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1 &&
      (absl::ascii_isdigit(suffix[1]) || suffix[1] == '-' || suffix[1] == '+')) {
    if (!absl::SimpleAtoi(suffix.substr(1), &exponent) || exponent > 18 || exponent < -18) {
      return std::nullopt;
    }
    suffix = "";
  }
  double v;
  if (!absl::SimpleAtod(number, &v) || !std::isfinite(v)) return std::nullopt;
  return std::make_pair(v * std::pow(10.0, exponent), suffix);
}
}  // namespace

absl::string_view QosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kBestEffort:
      return "BestEffort";
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kGuaranteed:
      return "Guaranteed";
  }
  return "Burstable";
}

QosClass PodQosClass(const Json& tmpl) {
  if (!tmpl.is_object()) return QosClass::kBestEffort;
  auto spec = tmpl.find("spec");
  if (spec == tmpl.end() || !spec->is_object()) return QosClass::kBestEffort;
  bool any = false;
  bool guaranteed = true;
  for (const char* list : {"containers", "initContainers"}) {
    auto l = spec->find(list);
    if (l == spec->end() || !l->is_array()) continue;
    for (const Json& c : *l) {
      if (!c.is_object()) continue;
      const std::string name = NameOf(c);
      if (name == kAgentContainer || name == kInstallContainer) continue;
      for (const char* resource : {"cpu", "memory"}) {
        const std::string limit = Limit(c, resource);
        std::string request = Request(c, resource);
        if (request.empty()) request = limit;  // the API server defaults it so
        any = any || !limit.empty() || !request.empty();
        const bool cpu = std::string(resource) == "cpu";
        const std::optional<int64_t> lim = cpu ? ParseCpuMillis(limit) : ParseBytes(limit);
        const std::optional<int64_t> req = cpu ? ParseCpuMillis(request) : ParseBytes(request);
        if (!lim || !req || *lim != *req) guaranteed = false;
      }
    }
  }
  if (!any) return QosClass::kBestEffort;
  return guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
}

std::optional<int64_t> ParseCpuMillis(absl::string_view quantity) {
  auto q = SplitQuantity(quantity);
  if (!q) return std::nullopt;
  double millis;
  if (q->second == "m") {
    millis = q->first;
  } else if (q->second.empty()) {
    millis = q->first * 1000;
  } else {
    return std::nullopt;
  }
  if (!(millis >= 0 && millis < 1e15)) return std::nullopt;
  return static_cast<int64_t>(std::ceil(millis));
}

std::optional<int64_t> MemoryLimitBytes(const Json& tmpl,
                                        const std::vector<std::string>& containers) {
  Json::json_pointer p("/spec/containers");
  if (!tmpl.contains(p) || !tmpl.at(p).is_array()) return std::nullopt;
  int64_t sum = 0;
  int counted = 0;
  for (const Json& c : tmpl.at(p)) {
    const std::string name = NameOf(c);
    if (name == kAgentContainer) continue;
    if (!containers.empty() &&
        std::find(containers.begin(), containers.end(), name) == containers.end()) {
      continue;
    }
    std::optional<int64_t> b = ParseBytes(Limit(c, "memory"));
    if (!b || *b <= 0) return std::nullopt;
    sum += *b;
    ++counted;
  }
  if (counted == 0) return std::nullopt;
  return sum;
}

std::optional<int64_t> ParseBytes(absl::string_view quantity) {
  auto q = SplitQuantity(quantity);
  if (!q) return std::nullopt;
  static const std::pair<absl::string_view, double> kSuffixes[] = {{"", 1},
                                                                   {"k", 1e3},
                                                                   {"M", 1e6},
                                                                   {"G", 1e9},
                                                                   {"T", 1e12},
                                                                   {"P", 1e15},
                                                                   {"E", 1e18},
                                                                   {"Ki", 1024.0},
                                                                   {"Mi", 1048576.0},
                                                                   {"Gi", 1073741824.0},
                                                                   {"Ti", 1099511627776.0},
                                                                   {"Pi", 1125899906842624.0},
                                                                   {"Ei", 1152921504606846976.0}};
  for (const auto& [suffix, mult] : kSuffixes) {
    if (q->second == suffix) {
      double bytes = q->first * mult;
      if (!(bytes >= 0 && bytes < 9.2e18)) return std::nullopt;
      return static_cast<int64_t>(bytes);
    }
  }
  return std::nullopt;
}

}  // namespace booster::rollout
