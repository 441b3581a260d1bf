#include "operator/rollout/pod_template.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/allocator.h"
#include "common/go_runtime.h"

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

void SetEnv(Json& container, const std::string& name, const std::string& value) {
  UpsertByName(Child(container, "env", Json::array()), Json{{"name", name}, {"value", value}});
}

Json FieldEnv(const char* name, const char* path) {
  return Json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

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
  const std::string v = e->value("value", "");
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
void ApplyGo(Json& c, const GoTuning& go) {
  if (go.gomaxprocs == "auto") {
    if (std::optional<int> n = GoMaxProcsFor(ParseCpuMillis(Limit(c, "cpu")), std::nullopt)) {
      SetEnv(c, "GOMAXPROCS", absl::StrCat(*n));
    }
  } else if (!go.gomaxprocs.empty()) {
    SetEnv(c, "GOMAXPROCS", go.gomaxprocs);
  }
  if (!go.gomemlimit.empty()) {
    if (std::optional<int> percent = GoMemLimitPercent(go.gomemlimit)) {
      if (std::optional<int64_t> bytes =
              GoMemLimitBytes(ParseBytes(Limit(c, "memory")), *percent)) {
        SetEnv(c, "GOMEMLIMIT", absl::StrCat(*bytes));
      }
    } else {
      SetEnv(c, "GOMEMLIMIT", go.gomemlimit);
    }
  }
  if (!go.gogc.empty()) SetEnv(c, "GOGC", go.gogc);
}

// The runtime library's standalone knobs (runtime/config.h, ConfigFromEnv): in force until
// the agent publishes a control page, and the fallback when it cannot.
void ApplyPreload(Json& c, const Tuning& t) {
  const PreloadTuning& p = t.preload;
  if (p.listen_backlog) SetEnv(c, "BOOSTER_LISTEN_BACKLOG", absl::StrCat(*p.listen_backlog));
  if (p.tcp_no_delay.value_or(false)) SetEnv(c, "BOOSTER_TCP_NODELAY", "1");
  if (p.tcp_quick_ack.value_or(false)) SetEnv(c, "BOOSTER_TCP_QUICKACK", "1");
  if (p.busy_poll_us) SetEnv(c, "BOOSTER_BUSY_POLL", absl::StrCat(*p.busy_poll_us));
  if (p.receive_buffer_bytes) SetEnv(c, "BOOSTER_RCVBUF", absl::StrCat(*p.receive_buffer_bytes));
  if (p.send_buffer_bytes) SetEnv(c, "BOOSTER_SNDBUF", absl::StrCat(*p.send_buffer_bytes));
  if (p.coarse_clocks.value_or(false)) SetEnv(c, "BOOSTER_CLOCK", "coarse");
  switch (t.placement) {
    case CpuPlacement::kNone:
      break;
    case CpuPlacement::kPinned:
      SetEnv(c, "BOOSTER_THREADS", "pin");
      break;
    case CpuPlacement::kSpread:
    case CpuPlacement::kWholeCores:
      SetEnv(c, "BOOSTER_THREADS", "confine");
      break;
  }
  switch (t.numa) {
    case NumaPolicy::kNone:
      break;
    case NumaPolicy::kPreferred:
    case NumaPolicy::kAlign:
      SetEnv(c, "BOOSTER_NUMA", "preferred");
      break;
    case NumaPolicy::kBind:
      SetEnv(c, "BOOSTER_NUMA", "bind");
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

absl::StatusOr<Json> EnrolledTemplate(const Json& original, const EnrollContext& ctx,
                                      const MutationOptions& opts) {
  if (!original.is_object()) return absl::InvalidArgumentError("the pod template is not an object");
  absl::StatusOr<std::vector<size_t>> selected = SelectContainers(original, ctx);
  if (!selected.ok()) return selected.status();
  Json t = original;
  Json& meta = Child(t, "metadata", Json::object());
  Child(meta, "labels", Json::object())[kArmLabel] = kArmBaseline;
  Child(meta, "annotations", Json::object())[kProfileAnnotation] =
      ctx.profile_namespace + "/" + ctx.profile_name;

  Json& spec = t["spec"];
  // The agent measures the app's processes through the pod's shared process namespace.
  if (!spec.value("shareProcessNamespace", false)) {
    spec["shareProcessNamespace"] = true;
    meta["annotations"][kSharedPidAnnotation] = "added";
  }
  Json& volumes = Child(spec, "volumes", Json::array());
  UpsertByName(volumes, Json{{"name", opts.volume_name}, {"emptyDir", Json::object()}});
  UpsertByName(volumes, Json{{"name", opts.token_volume_name},
                             {"projected",
                              {{"sources", Json::array({{{"serviceAccountToken",
                                                          {{"audience", opts.token_audience},
                                                           {"expirationSeconds", 3600},
                                                           {"path", "token"}}}}})}}}});
  const Json resources = SidecarResources(original, opts);
  UpsertByName(Child(spec, "initContainers", Json::array()), InstallContainer(opts, resources));

  Json& containers = spec["containers"];
  for (size_t i : *selected) {
    Json& c = containers[i];
    const Json* preload = EnvEntry(c, "LD_PRELOAD");
    if (preload != nullptr && preload->value("value", "") != opts.LibraryPath()) continue;
    SetEnv(c, "LD_PRELOAD", opts.LibraryPath());
    SetEnv(c, "BOOSTER_CONTROL", opts.ControlPath());
    UpsertByName(
        Child(c, "volumeMounts", Json::array()),
        Json{{"name", opts.volume_name}, {"mountPath", opts.mount_path}, {"readOnly", true}});
  }
  UpsertByName(containers, AgentContainer(kArmBaseline, "observe", ctx, opts, "", resources,
                                          AppFactsOf(original, *selected, nullptr)));
  Seal(t);
  return t;
}

absl::StatusOr<Json> TunedTemplate(const Json& original, const Tuning& tuning,
                                   absl::string_view arm, const EnrollContext& ctx,
                                   const MutationOptions& opts) {
  absl::StatusOr<Json> enrolled = EnrolledTemplate(original, ctx, opts);
  if (!enrolled.ok()) return enrolled.status();
  absl::StatusOr<std::vector<size_t>> selected = SelectContainers(original, ctx);
  if (!selected.ok()) return selected.status();
  Json t = *std::move(enrolled);
  const Json tuning_json = TuningToJson(tuning);
  t["metadata"]["labels"][kArmLabel] = std::string(arm);
  t["metadata"]["annotations"][kTuningHashAnnotation] = Fnv1aHex(tuning_json.dump());
  Json& containers = t["spec"]["containers"];
  bool chain_allocator = false;
  for (size_t i : *selected) {
    Json& c = containers[i];
    ApplyGo(c, tuning.go);
    if (HasPreload(c, opts)) {
      ApplyPreload(c, tuning);
      if (tuning.preload.allocator != Allocator::kDefault) {
        SetEnv(c, "LD_PRELOAD", AllocatorPreload(AllocatorName(tuning.preload.allocator), opts));
        chain_allocator = true;
      }
    }
  }
  // The install init container copies the allocator from the agent image into the
  // shared volume, beside the library.
  if (chain_allocator) {
    for (Json& ic : t["spec"]["initContainers"]) {
      if (ic.value("name", "") != kInstallContainer) continue;
      ic["args"].push_back("--allocator");
      ic["args"].push_back(std::string(AllocatorName(tuning.preload.allocator)));
    }
  }
  UpsertByName(containers, AgentContainer(arm, "tune", ctx, opts, tuning_json.dump(),
                                          SidecarResources(original, opts),
                                          AppFactsOf(original, *selected, &tuning)));
  if (!tuning.sysctls.empty()) {
    Json& sc = Child(t["spec"], "securityContext", Json::object());
    Json& sysctls = Child(sc, "sysctls", Json::array());
    for (const auto& [name, value] : tuning.sysctls) {
      UpsertByName(sysctls, Json{{"name", name}, {"value", value}});
    }
  }
  Seal(t);
  return t;
}

Json StripEnrollment(const Json& tmpl, const MutationOptions& opts) {
  if (!tmpl.is_object()) return tmpl;
  Json t = tmpl;
  bool shared_pid_added = false;
  if (t.contains("metadata") && t["metadata"].is_object()) {
    Json& meta = t["metadata"];
    RemoveKey(meta, "labels", kArmLabel);
    RemoveKey(meta, "annotations", kProfileAnnotation);
    RemoveKey(meta, "annotations", kTemplateHashAnnotation);
    RemoveKey(meta, "annotations", kTuningHashAnnotation);
    shared_pid_added = RemoveKey(meta, "annotations", kSharedPidAnnotation);
    if (meta.empty()) t.erase("metadata");
  }
  if (!t.contains("spec") || !t["spec"].is_object()) return t;
  Json& spec = t["spec"];
  if (shared_pid_added) spec.erase("shareProcessNamespace");
  RemoveByName(spec, "volumes", opts.volume_name);
  RemoveByName(spec, "volumes", opts.token_volume_name);
  RemoveByName(spec, "initContainers", kInstallContainer);
  RemoveByName(spec, "containers", kAgentContainer);
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (Json& c : spec["containers"]) {
      if (!c.is_object()) continue;
      if (HasPreload(c, opts)) RemoveByName(c, "env", "LD_PRELOAD");
      const Json* control = EnvEntry(c, "BOOSTER_CONTROL");
      if (control != nullptr && control->value("value", "") == opts.ControlPath()) {
        RemoveByName(c, "env", "BOOSTER_CONTROL");
      }
      RemoveByName(c, "volumeMounts", opts.volume_name);
    }
  }
  return t;
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

namespace {
std::string MetaString(const Json& tmpl, const char* map, const char* key) {
  if (!tmpl.is_object() || !tmpl.contains("metadata")) return "";
  const Json& meta = tmpl["metadata"];
  if (!meta.is_object() || !meta.contains(map) || !meta[map].is_object()) return "";
  auto it = meta[map].find(key);
  return it != meta[map].end() && it->is_string() ? it->get<std::string>() : "";
}
}  // namespace

std::string TemplateArm(const Json& tmpl) { return MetaString(tmpl, "labels", kArmLabel); }

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
      const std::string name = c.value("name", "");
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
