#include "operator/rollout/pod_template.h"

#include <algorithm>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;

// A template as the API server returns it: a Go service and a proxy that already uses
// LD_PRELOAD for something of its own.
Json Original() {
  return Json::parse(R"json({
    "metadata": {"labels": {"app": "checkout"}, "annotations": {"team": "shop"}},
    "spec": {
      "containers": [
        {"name": "app", "image": "shop/checkout:1.4",
         "env": [{"name": "FOO", "value": "bar"}, {"name": "GOMAXPROCS", "value": "64"}],
         "ports": [{"containerPort": 8080}],
         "resources": {"limits": {"cpu": "1500m", "memory": "512Mi"}}},
        {"name": "proxy", "image": "envoy:1",
         "env": [{"name": "LD_PRELOAD", "value": "/usr/lib/libtrace.so"}]}
      ],
      "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"},
                                      {"name": "net.core.somaxconn", "value": "128"}]},
      "dnsPolicy": "ClusterFirst",
      "restartPolicy": "Always"
    }})json");
}

EnrollContext Ctx() { return EnrollContext{"shop", "checkout", {}}; }

Tuning SampleTuning() {
  Tuning t;
  t.placement = CpuPlacement::kWholeCores;
  t.numa = NumaPolicy::kAlign;
  t.sysctls = {{"net.core.somaxconn", "4096"}, {"net.ipv4.tcp_tw_reuse", "1"}};
  t.go.gomaxprocs = "auto";
  t.go.gomemlimit = "auto";
  t.preload.listen_backlog = 4096;
  t.preload.tcp_no_delay = true;
  t.preload.allocator = Allocator::kJemalloc;
  return t;
}

// The sample tuning without CPU placement or NUMA policy.
Tuning SampleTuningWithout() {
  Tuning t = SampleTuning();
  t.placement = CpuPlacement::kNone;
  t.numa = NumaPolicy::kNone;
  return t;
}

const Json* Find(const Json& array, const std::string& name) {
  for (const Json& e : array) {
    if (e.value("name", "") == name) return &e;
  }
  return nullptr;
}

std::string Env(const Json& container, const std::string& name) {
  if (!container.contains("env")) return "<unset>";
  const Json* e = Find(container["env"], name);
  return e == nullptr ? "<unset>" : e->value("value", "<valueFrom>");
}

const Json& Container(const Json& tmpl, const std::string& name) {
  const Json* c = Find(tmpl["spec"]["containers"], name);
  EXPECT_NE(c, nullptr) << name;
  static const Json kEmpty = Json::object();
  return c == nullptr ? kEmpty : *c;
}

TEST(EnrolledTemplateTest, InjectsDormantAgentLibraryVolumeAndLabel) {
  MutationOptions opts;
  absl::StatusOr<Json> t = EnrolledTemplate(Original(), Ctx(), opts);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(TemplateArm(*t), kArmBaseline);
  EXPECT_EQ((*t)["metadata"]["labels"]["app"], "checkout");
  EXPECT_EQ((*t)["metadata"]["annotations"][kProfileAnnotation], "shop/checkout");
  EXPECT_TRUE(IsEnrolled(*t));

  const Json* vol = Find((*t)["spec"]["volumes"], "booster");
  ASSERT_NE(vol, nullptr);
  EXPECT_TRUE((*vol)["emptyDir"].is_object());
  const Json* token = Find((*t)["spec"]["volumes"], "booster-token");
  ASSERT_NE(token, nullptr);
  EXPECT_EQ((*token)["projected"]["sources"][0]["serviceAccountToken"]["audience"],
            "booster-operator");

  const Json* init = Find((*t)["spec"]["initContainers"], kInstallContainer);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ((*init)["args"], Json::parse(R"(["install", "/booster"])"));
  EXPECT_EQ((*init)["image"], opts.agent_image);

  const Json& agent = Container(*t, kAgentContainer);
  EXPECT_EQ(Env(agent, "BOOSTER_AGENT_MODE"), "observe");
  EXPECT_EQ(Env(agent, "BOOSTER_ARM"), "baseline");
  EXPECT_EQ(Env(agent, "BOOSTER_PROFILE"), "shop/checkout");
  EXPECT_EQ(Env(agent, "BOOSTER_CONTROL"), "/booster/control");
  EXPECT_EQ(Env(agent, "BOOSTER_TUNING"), "<unset>");
  EXPECT_EQ(Env(agent, "POD_NAME"), "<valueFrom>");
  EXPECT_EQ(agent["securityContext"]["allowPrivilegeEscalation"], false);

  const Json& app = Container(*t, "app");
  EXPECT_EQ(Env(app, "LD_PRELOAD"), "/booster/libbooster.so");
  EXPECT_EQ(Env(app, "BOOSTER_CONTROL"), "/booster/control");
  EXPECT_EQ(Env(app, "FOO"), "bar");
  EXPECT_EQ(Env(app, "GOMAXPROCS"), "64") << "the baseline must run exactly as before";
  const Json* mount = Find(app["volumeMounts"], "booster");
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ((*mount)["readOnly"], true);
  EXPECT_EQ((*mount)["mountPath"], "/booster");

  // The proxy's own LD_PRELOAD is left alone, and so is the proxy.
  EXPECT_EQ(Container(*t, "proxy"), Original()["spec"]["containers"][1]);
  // No tuning in the baseline: the sysctls are the user's own.
  EXPECT_EQ((*t)["spec"]["securityContext"], Original()["spec"]["securityContext"]);
}

TEST(EnrolledTemplateTest, IsIdempotentAndStripsBackExactly) {
  MutationOptions opts;
  Json once = *EnrolledTemplate(Original(), Ctx(), opts);
  EXPECT_EQ(*EnrolledTemplate(once, Ctx(), opts), once);
  EXPECT_EQ(TeamTemplate(once, opts), Original());
  EXPECT_EQ(TeamTemplate(Original(), opts), Original());
  // A minimal template (no env, mounts, volumes, init containers) strips back as well.
  Json bare = Json::parse(R"({"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "a", "image": "a"}]}})");
  Json enrolled = *EnrolledTemplate(bare, Ctx(), opts);
  EXPECT_TRUE(enrolled["spec"]["containers"][0].contains("env"));
  EXPECT_EQ(TeamTemplate(enrolled, opts), bare);
}

TEST(EnrolledTemplateTest, TheAgentSeesTheAppRunsRestrictedAndServesItsPort) {
  absl::StatusOr<Json> t = EnrolledTemplate(Original(), Ctx(), MutationOptions{});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)["spec"]["shareProcessNamespace"], true);
  const Json* agent = Find((*t)["spec"]["containers"], kAgentContainer);
  ASSERT_NE(agent, nullptr);
  EXPECT_THAT((*agent)["args"].dump(), HasSubstr("--metrics-address=0.0.0.0:9901"));
  EXPECT_EQ((*agent)["ports"][0]["name"], "booster-agent");
  EXPECT_EQ((*agent)["ports"][0]["containerPort"], 9901);
  EXPECT_EQ((*agent)["livenessProbe"]["httpGet"]["port"], "booster-agent");
  EXPECT_FALSE(agent->contains("readinessProbe")) << "the sidecar must not gate the app's readiness";
  const Json* hash = Find((*agent)["env"], "BOOSTER_TEMPLATE_HASH");
  ASSERT_NE(hash, nullptr);
  EXPECT_EQ((*hash)["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['booster.dev/template-hash']");
  EXPECT_EQ(Env(*agent, "BOOSTER_CONTAINERS"), "<unset>");  // every app container
  EXPECT_EQ(Env(*agent, "BOOSTER_TEST_CRASH_AT"), "<unset>") << "the chaos hook is opt-in";
  MutationOptions chaos;
  chaos.agent_crash_at = "revert:/booster/.crashed";
  absl::StatusOr<Json> crashing = EnrolledTemplate(Original(), Ctx(), chaos);
  ASSERT_TRUE(crashing.ok());
  EXPECT_EQ(Env(*Find((*crashing)["spec"]["containers"], kAgentContainer), "BOOSTER_TEST_CRASH_AT"),
            "revert:/booster/.crashed");
  absl::StatusOr<Json> one =
      EnrolledTemplate(Original(), EnrollContext{"shop", "checkout", {"app"}}, MutationOptions{});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Env(*Find((*one)["spec"]["containers"], kAgentContainer), "BOOSTER_CONTAINERS"), "app");
  for (const Json* c : {agent, Find((*t)["spec"]["initContainers"], kInstallContainer)}) {
    ASSERT_NE(c, nullptr);
    const Json& sc = (*c)["securityContext"];
    EXPECT_EQ(sc["runAsNonRoot"], true);
    EXPECT_EQ(sc["runAsUser"], 65532);
    EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
    EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
    EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
    EXPECT_EQ(sc["capabilities"]["drop"], Json::array({"ALL"}));
  }
}

// Enrollment never changes the pod's QoS class: a Guaranteed pod (whose app may hold
// exclusive CPUs under the static CPU manager) stays Guaranteed, a BestEffort one stays
// BestEffort, a Burstable one Burstable; the tuned arms too.
TEST(EnrolledTemplateTest, KeepsThePodsQosClass) {
  const auto tmpl = [](const char* resources) {
    return Json::parse(absl::StrCat(
        R"({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
             {"name": "app", "image": "web:1", "resources": )",
        resources, "}]}}"));
  };
  struct Case {
    std::string name;
    Json tmpl;
    QosClass want;
  };
  std::vector<Case> cases = {
      {"BestEffort", tmpl("{}"), QosClass::kBestEffort},
      {"GuaranteedByLimitsOnly", tmpl(R"({"limits": {"cpu": "2", "memory": "1Gi"}})"),
       QosClass::kGuaranteed},
      {"GuaranteedEqualRequests",
       tmpl(R"({"requests": {"cpu": "2000m", "memory": "1024Mi"},
                "limits": {"cpu": "2", "memory": "1Gi"}})"),
       QosClass::kGuaranteed},
      {"BurstableRequestBelowLimit",
       tmpl(R"({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}})"),
       QosClass::kBurstable},
      {"BurstableNoMemoryLimit", tmpl(R"({"limits": {"cpu": "2"}})"), QosClass::kBurstable},
  };
  // An init container without resources makes a Guaranteed app Burstable.
  Json with_init = tmpl(R"({"limits": {"cpu": "2", "memory": "1Gi"}})");
  with_init["spec"]["initContainers"] = Json::array({{{"name", "migrate"}, {"image", "web:1"}}});
  cases.push_back({"InitContainerWithoutResources", with_init, QosClass::kBurstable});
  Tuning tuning;
  tuning.go.gomaxprocs = "auto";
  for (const Case& c : cases) {
    EXPECT_EQ(PodQosClass(c.tmpl), c.want) << c.name;
    absl::StatusOr<Json> enrolled = EnrolledTemplate(c.tmpl, Ctx(), MutationOptions{});
    ASSERT_TRUE(enrolled.ok()) << c.name << ": " << enrolled.status();
    EXPECT_EQ(PodQosClass(*enrolled), c.want) << c.name;
    absl::StatusOr<Json> tuned = TunedTemplate(c.tmpl, tuning, kArmCanary, Ctx(), MutationOptions{});
    ASSERT_TRUE(tuned.ok()) << c.name << ": " << tuned.status();
    EXPECT_EQ(PodQosClass(*tuned), c.want) << c.name;
    // Counted with Booster's own containers too, as the kubelet does.
    Json all = *tuned;
    for (Json* list : {&all["spec"]["containers"], &all["spec"]["initContainers"]}) {
      for (Json& container : *list) container["name"] = "x-" + container.value("name", "");
    }
    EXPECT_EQ(PodQosClass(all), c.want) << c.name << " with the agent counted";
  }
  EXPECT_EQ(QosClassName(QosClass::kGuaranteed), "Guaranteed");
}

TEST(EnrolledTemplateTest, AgentsStreamOnlyWhenTheyCanVerifyTheOperator) {
  const auto agent_of = [](const MutationOptions& opts, const EnrollContext& ctx) {
    absl::StatusOr<Json> t = EnrolledTemplate(Original(), ctx, opts);
    EXPECT_TRUE(t.ok()) << t.status();
    return *Find((*t)["spec"]["containers"], kAgentContainer);
  };
  // No CA: no address either, so the agent logs its windows instead of failing to connect.
  Json agent = agent_of(MutationOptions{}, Ctx());
  EXPECT_EQ(Env(agent, "BOOSTER_OPERATOR"), "<unset>");
  EXPECT_EQ(Env(agent, "BOOSTER_OPERATOR_CA"), "<unset>");
  EXPECT_EQ(Env(agent, "BOOSTER_TOKEN_FILE"), "/var/run/secrets/booster/token");
  EXPECT_EQ(Env(agent, "BOOSTER_WINDOW"), "<unset>");
  EXPECT_EQ(Env(agent, "BOOSTER_APP_METRICS"), "<unset>");
  MutationOptions opts;
  opts.operator_address = "10.96.0.50:9443";
  opts.operator_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  absl::StatusOr<ProfileSpec> spec = ParseSpec(Json::parse(R"({
      "targetRef": {"kind": "Deployment", "name": "checkout"},
      "rollout": {"stepDuration": "1m", "analysis": {"interval": "15s",
                  "source": {"port": 8080, "errorLabel": "code"}}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  agent = agent_of(opts, EnrollContextFor("shop", "checkout", *spec));
  EXPECT_EQ(Env(agent, "BOOSTER_OPERATOR"), "10.96.0.50:9443");
  EXPECT_EQ(Env(agent, "BOOSTER_OPERATOR_CA"), opts.operator_ca_pem);
  EXPECT_EQ(Env(agent, "BOOSTER_WINDOW"), "15s");
  EXPECT_EQ(Json::parse(Env(agent, "BOOSTER_APP_METRICS")),
            Json::parse(R"({"port": 8080, "errorLabel": "code"})"));
  // Without a source the agent finds the app's metrics by itself.
  spec->rollout.analysis.source = Json::object();
  EXPECT_EQ(Env(agent_of(opts, EnrollContextFor("shop", "checkout", *spec)), "BOOSTER_APP_METRICS"),
            "<unset>");
}

TEST(EnrolledTemplateTest, AProcessNamespaceSharedBeforeStaysSharedWhenStripped) {
  Json original = Original();
  original["spec"]["shareProcessNamespace"] = true;
  absl::StatusOr<Json> t = EnrolledTemplate(original, Ctx(), MutationOptions{});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(TeamTemplate(*t, MutationOptions{}), original);
  // Turned on by enrollment: turned off again.
  absl::StatusOr<Json> u = EnrolledTemplate(Original(), Ctx(), MutationOptions{});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(TeamTemplate(*u, MutationOptions{})["spec"].contains("shareProcessNamespace"));
}

TEST(EnrolledTemplateTest, SelectsContainersByName) {
  EnrollContext ctx = Ctx();
  ctx.containers = {"app"};
  Json bare = Json::parse(R"({"spec": {"containers": [{"name": "app"}, {"name": "side"}]}})");
  Json t = *EnrolledTemplate(bare, ctx, MutationOptions{});
  EXPECT_EQ(Env(Container(t, "app"), "LD_PRELOAD"), "/booster/libbooster.so");
  EXPECT_EQ(Env(Container(t, "side"), "LD_PRELOAD"), "<unset>");

  ctx.containers = {"web"};
  absl::StatusOr<Json> bad = EnrolledTemplate(bare, ctx, MutationOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("names \"web\", which the Deployment does not have (app, side)"));
}

TEST(EnrolledTemplateTest, RejectsTemplatesWithoutContainers) {
  for (const char* text : {R"({})", R"({"spec": {}})", R"({"spec": {"containers": []}})", "[]",
                           R"({"spec": {"containers": [{"image": "x"}]}})"}) {
    EXPECT_FALSE(EnrolledTemplate(Json::parse(text), Ctx(), MutationOptions{}).ok()) << text;
  }
}

TEST(TunedTemplateTest, AddsTheTuning) {
  MutationOptions opts;
  absl::StatusOr<Json> t = TunedTemplate(Original(), SampleTuning(), kArmCanary, Ctx(), opts);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(TemplateArm(*t), kArmCanary);
  const Json& app = Container(*t, "app");
  EXPECT_EQ(Env(app, "GOMAXPROCS"), "1") << "1500m: the whole cores of the limit";
  EXPECT_EQ(Env(app, "GOMEMLIMIT"), "483183820") << "90% of 512Mi";
  EXPECT_EQ(Env(app, "BOOSTER_LISTEN_BACKLOG"), "4096");
  EXPECT_EQ(Env(app, "BOOSTER_TCP_NODELAY"), "1");
  EXPECT_EQ(Env(app, "BOOSTER_TCP_QUICKACK"), "<unset>");
  EXPECT_EQ(Env(app, "BOOSTER_ALLOCATOR"), "<unset>") << "nothing reads it";
  EXPECT_EQ(Env(app, "BOOSTER_THREADS"), "confine");
  EXPECT_EQ(Env(app, "BOOSTER_NUMA"), "preferred");
  // The allocator is loaded first, so its malloc is the one the program binds to, and
  // the install container copies it from the agent image.
  EXPECT_EQ(Env(app, "LD_PRELOAD"), "/booster/libjemalloc.so.2:/booster/libbooster.so");
  const Json* install = Find((*t)["spec"]["initContainers"], kInstallContainer);
  ASSERT_NE(install, nullptr);
  EXPECT_EQ((*install)["args"], Json::parse(R"(["install", "/booster", "--allocator", "jemalloc"])"));
  // GOMAXPROCS replaced in place: the env list keeps its order.
  EXPECT_EQ(app["env"][1]["name"], "GOMAXPROCS");

  // The proxy runs its own LD_PRELOAD: Go knobs apply (it was selected), library knobs not.
  const Json& proxy = Container(*t, "proxy");
  EXPECT_EQ(Env(proxy, "LD_PRELOAD"), "/usr/lib/libtrace.so");
  EXPECT_EQ(Env(proxy, "BOOSTER_LISTEN_BACKLOG"), "<unset>");
  EXPECT_EQ(Env(proxy, "GOMAXPROCS"), "<unset>") << "no CPU limit: auto leaves it unset";

  const Json& agent = Container(*t, kAgentContainer);
  EXPECT_EQ(Env(agent, "BOOSTER_AGENT_MODE"), "tune");
  EXPECT_EQ(Env(agent, "BOOSTER_ARM"), "canary");
  EXPECT_EQ(Json::parse(Env(agent, "BOOSTER_TUNING")), TuningToJson(SampleTuning()));

  // Sysctls: the user's syncookies kept, somaxconn replaced, tw_reuse added.
  Json sysctls = (*t)["spec"]["securityContext"]["sysctls"];
  EXPECT_EQ(sysctls, Json::parse(R"([{"name": "net.ipv4.tcp_syncookies", "value": "1"},
                                     {"name": "net.core.somaxconn", "value": "4096"},
                                     {"name": "net.ipv4.tcp_tw_reuse", "value": "1"}])"));
  EXPECT_FALSE((*t)["metadata"]["annotations"][kTuningHashAnnotation].get<std::string>().empty());
}

// GOMAXPROCS / GOMEMLIMIT `auto` by the rule the agent's planner uses too
// (common/go_runtime.h): the whole cores of the CPU limit, at least 1; 90% (or the
// given share) of the memory limit; unset without a limit.
TEST(TunedTemplateTest, GoKnobsFollowTheOneRuleForEveryLimit) {
  struct Case {
    const char* cpu;  // "" = no CPU limit
    const char* memory;
    const char* gomemlimit;
    const char* want_gomaxprocs;
    const char* want_gomemlimit;
  };
  const Case cases[] = {
      {"500m", "64Mi", "auto", "1", "60397977"},    {"1", "64Mi", "85%", "1", "57042534"},
      {"1500m", "512Mi", "auto", "1", "483183820"}, {"2", "1Gi", "50%", "2", "536870912"},
      {"0.5", "", "auto", "1", "<unset>"},          {"", "64Mi", "auto", "<unset>", "60397977"},
      {"", "", "auto", "<unset>", "<unset>"},
  };
  for (const Case& c : cases) {
    Json original = Original();
    Json limits = Json::object();
    if (*c.cpu != '\0') limits["cpu"] = c.cpu;
    if (*c.memory != '\0') limits["memory"] = c.memory;
    original["spec"]["containers"][0]["resources"] = {{"limits", limits}};
    original["spec"]["containers"][0]["env"] = Json::array();
    Tuning t;
    t.go.gomaxprocs = "auto";
    t.go.gomemlimit = c.gomemlimit;
    absl::StatusOr<Json> out = TunedTemplate(original, t, kArmCanary, Ctx(), MutationOptions{});
    ASSERT_TRUE(out.ok()) << out.status();
    const Json& app = Container(*out, "app");
    EXPECT_EQ(Env(app, "GOMAXPROCS"), c.want_gomaxprocs) << "cpu " << c.cpu;
    EXPECT_EQ(Env(app, "GOMEMLIMIT"), c.want_gomemlimit) << "memory " << c.memory;
  }
}

// The agent plans with the app container's limits (it cannot read the app's cgroup from
// inside the pod), and gets the least privilege that lets it place the app's threads:
// none without a placement; the app's own user when the template names it; else root
// with only CAP_SYS_NICE (a capability added to a non-root container is not effective).
TEST(TunedTemplateTest, TheAgentGetsTheAppsLimitsAndTheLeastPrivilegeToPlaceIt) {
  Tuning placed;
  placed.placement = CpuPlacement::kPinned;
  struct Case {
    const char* name;
    Tuning tuning;
    Json container_sc;  // null: none
    Json pod_sc;
    int64_t want_user;
    bool want_non_root;
    Json want_add;  // null: no capability added
  };
  Tuning numa_only;
  numa_only.numa = NumaPolicy::kPreferred;
  const Case cases[] = {
      {"no placement", SampleTuningWithout(), nullptr, nullptr, 65532, true, nullptr},
      {"app user unknown", placed, nullptr, nullptr, 0, false, Json::array({"SYS_NICE"})},
      {"numa only, user unknown", numa_only, nullptr, nullptr, 0, false, Json::array({"SYS_NICE"})},
      {"container user", placed, Json{{"runAsUser", 1000}, {"runAsGroup", 3000}}, nullptr, 1000,
       true, nullptr},
      {"pod user", placed, nullptr, Json{{"runAsUser", 2000}}, 2000, true, nullptr},
      {"container wins", placed, Json{{"runAsUser", 1000}}, Json{{"runAsUser", 2000}}, 1000, true,
       nullptr},
      {"root app", placed, Json{{"runAsUser", 0}}, nullptr, 0, false, nullptr},
  };
  for (const Case& c : cases) {
    Json original = Original();
    if (!c.container_sc.is_null())
      original["spec"]["containers"][0]["securityContext"] = c.container_sc;
    if (!c.pod_sc.is_null())
      original["spec"]["securityContext"]["runAsUser"] = c.pod_sc["runAsUser"];
    absl::StatusOr<Json> t =
        TunedTemplate(original, c.tuning, kArmCanary, Ctx(), MutationOptions{});
    ASSERT_TRUE(t.ok()) << t.status();
    const Json& agent = Container(*t, kAgentContainer);
    const Json& sc = agent["securityContext"];
    EXPECT_EQ(sc["runAsUser"], c.want_user) << c.name;
    EXPECT_EQ(sc["runAsNonRoot"], c.want_non_root) << c.name;
    if (c.container_sc.is_object() && c.container_sc.contains("runAsGroup")) {
      EXPECT_EQ(sc["runAsGroup"], c.container_sc["runAsGroup"]) << c.name;
    } else if (c.want_user != 65532) {
      EXPECT_EQ(sc["runAsGroup"], c.want_add.is_null() ? 0 : 65532) << c.name;
    }
    EXPECT_EQ(sc["allowPrivilegeEscalation"], false) << c.name;
    EXPECT_EQ(sc["capabilities"]["drop"], Json::array({"ALL"})) << c.name;
    EXPECT_EQ(sc["capabilities"].contains("add") ? sc["capabilities"]["add"] : Json(), c.want_add)
        << c.name;
    // The first selected container's limits: 1500m / 512Mi.
    EXPECT_EQ(Env(agent, "BOOSTER_TARGET_CPU_LIMIT"), "1500") << c.name;
    EXPECT_EQ(Env(agent, "BOOSTER_TARGET_MEMORY_LIMIT"), "536870912") << c.name;
  }
  // The baseline's observing agent gets the limits too, and no privilege.
  absl::StatusOr<Json> enrolled = EnrolledTemplate(Original(), Ctx(), MutationOptions{});
  ASSERT_TRUE(enrolled.ok());
  const Json& agent = Container(*enrolled, kAgentContainer);
  EXPECT_EQ(Env(agent, "BOOSTER_TARGET_CPU_LIMIT"), "1500");
  EXPECT_EQ(agent["securityContext"]["runAsUser"], 65532);
  // No limits: no variables.
  Json unlimited = Original();
  unlimited["spec"]["containers"][0].erase("resources");
  const absl::StatusOr<Json> unlimited_tuned = TunedTemplate(unlimited, placed, kArmCanary, Ctx(), {});
  ASSERT_TRUE(unlimited_tuned.ok()) << unlimited_tuned.status();
  const Json& bare = Container(*unlimited_tuned, kAgentContainer);
  EXPECT_EQ(Env(bare, "BOOSTER_TARGET_CPU_LIMIT"), "<unset>");
  EXPECT_EQ(Env(bare, "BOOSTER_TARGET_MEMORY_LIMIT"), "<unset>");
}

TEST(TunedTemplateTest, IsIdempotentFromAnyStartingPoint) {
  MutationOptions opts;
  Json tuned = *TunedTemplate(Original(), SampleTuning(), kArmCanary, Ctx(), opts);
  EXPECT_EQ(*TunedTemplate(tuned, SampleTuning(), kArmCanary, Ctx(), opts), tuned);
  Json enrolled = *EnrolledTemplate(Original(), Ctx(), opts);
  EXPECT_EQ(*TunedTemplate(enrolled, SampleTuning(), kArmCanary, Ctx(), opts), tuned);
}

TEST(TunedTemplateTest, ExplicitGoKnobsAndPercentages) {
  Tuning t;
  t.go.gomaxprocs = "3";
  t.go.gomemlimit = "50%";
  t.go.gogc = "200";
  t.preload.coarse_clocks = true;
  t.preload.busy_poll_us = 50;
  t.preload.receive_buffer_bytes = 1 << 20;
  t.placement = CpuPlacement::kPinned;
  t.numa = NumaPolicy::kBind;
  Json out = *TunedTemplate(Original(), t, kArmPromoted, Ctx(), MutationOptions{});
  const Json& app = Container(out, "app");
  EXPECT_EQ(Env(app, "GOMAXPROCS"), "3");
  EXPECT_EQ(Env(app, "GOMEMLIMIT"), "268435456");
  EXPECT_EQ(Env(app, "GOGC"), "200");
  EXPECT_EQ(Env(app, "BOOSTER_CLOCK"), "coarse");
  EXPECT_EQ(Env(app, "BOOSTER_BUSY_POLL"), "50");
  EXPECT_EQ(Env(app, "BOOSTER_RCVBUF"), "1048576");
  EXPECT_EQ(Env(app, "BOOSTER_THREADS"), "pin");
  EXPECT_EQ(Env(app, "BOOSTER_NUMA"), "bind");
  EXPECT_EQ(TemplateArm(out), kArmPromoted);
  t.go.gomemlimit = "768MiB";
  out = *TunedTemplate(Original(), t, kArmCanary, Ctx(), MutationOptions{});
  EXPECT_EQ(Env(Container(out, "app"), "GOMEMLIMIT"), "768MiB");
}

// --- the layer: Booster's changes come off any later version of the template ---------------

TEST(TeamTemplateTest, ATunedTemplateStripsBackToTheTeamsByteForByte) {
  MutationOptions opts;
  for (const Tuning& tuning : {SampleTuning(), SampleTuningWithout(), Tuning{}}) {
    Json tuned = *TunedTemplate(Original(), tuning, kArmPromoted, Ctx(), opts);
    // GOMAXPROCS 64 and somaxconn 128 were the team's, replaced by the tuning.
    ASSERT_EQ(Env(Container(tuned, "app"), "GOMAXPROCS"), tuning.go.gomaxprocs.empty() ? "64" : "1");
    EXPECT_EQ(TeamTemplate(tuned, opts), Original());
    EXPECT_EQ(TeamTemplate(Original(), opts), Original()) << "no layer: unchanged";
    // Tuning a tuned template starts from the team's: the same result.
    EXPECT_EQ(*TunedTemplate(tuned, tuning, kArmPromoted, Ctx(), opts), tuned);
    EXPECT_EQ(*EnrolledTemplate(tuned, Ctx(), opts), *EnrolledTemplate(Original(), Ctx(), opts));
  }
}

TEST(TeamTemplateTest, KeepsEveryChangeSomeoneElseMadeSince) {
  MutationOptions opts;
  Json tuned = *TunedTemplate(Original(), SampleTuning(), kArmPromoted, Ctx(), opts);
  // The team's next release, applied over the tuned template: a new image, a new env
  // entry, a changed FOO, their own new value of a knob the tuning set, and a sysctl of
  // theirs the tuning replaced, now removed.
  Json later = tuned;
  Json& app = later["spec"]["containers"][0];
  app["image"] = "shop/checkout:1.5";
  app["env"].push_back({{"name", "NEW", "value", "1"}});
  app["env"][0]["value"] = "baz";
  app["env"][1] = {{"name", "GOMAXPROCS"}, {"value", "8"}};
  Json& sysctls = later["spec"]["securityContext"]["sysctls"];
  sysctls.erase(std::remove_if(sysctls.begin(), sysctls.end(),
                               [](const Json& e) { return e["name"] == "net.core.somaxconn"; }),
                sysctls.end());
  later["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "2026-12-02T10:00:00Z";

  Json want = Original();
  Json& w = want["spec"]["containers"][0];
  w["image"] = "shop/checkout:1.5";
  w["env"][0]["value"] = "baz";
  w["env"][1] = {{"name", "GOMAXPROCS"}, {"value", "8"}};  // theirs now, not the old 64
  w["env"].push_back({{"name", "NEW", "value", "1"}});
  want["spec"]["securityContext"]["sysctls"] =
      Json::parse(R"([{"name": "net.ipv4.tcp_syncookies", "value": "1"}])");  // removed: stays so
  want["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "2026-12-02T10:00:00Z";
  EXPECT_EQ(TeamTemplate(later, opts), want);
}

TEST(TeamTemplateTest, AnythingBoosterAddedComesOffEvenWhenCreatedByIt) {
  MutationOptions opts;
  // No env, no mounts, no volumes, no securityContext: every list and map Booster created
  // goes again.
  Json bare = Json::parse(R"({"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "a", "image": "a",
                                        "resources": {"limits": {"cpu": "2"}}}]}})");
  Json tuned = *TunedTemplate(bare, SampleTuning(), kArmCanary, Ctx(), opts);
  ASSERT_TRUE(tuned["spec"].contains("securityContext"));
  ASSERT_TRUE(tuned["spec"]["shareProcessNamespace"].get<bool>());
  EXPECT_EQ(TeamTemplate(tuned, opts), bare);
}

// Random templates and tunings: TeamTemplate undoes EnrolledTemplate and TunedTemplate
// exactly, whatever the team's template had of its own.
TEST(TeamTemplateTest, IsTheExactInverseOnRandomTemplates) {
  std::mt19937 rng(21);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  MutationOptions opts;
  int checked = 0;
  for (int round = 0; round < 400; ++round) {
    Json t = {{"metadata", {{"labels", {{"app", "x"}}}}}, {"spec", Json::object()}};
    if (pick(2)) t["metadata"]["annotations"] = {{"team", "a"}};
    Json& spec = t["spec"];
    const int containers = 1 + pick(3);
    for (int i = 0; i < containers; ++i) {
      Json c = {{"name", absl::StrCat("c", i)}, {"image", "img"}};
      if (pick(2)) {
        c["env"] = Json::array();
        for (const char* name : {"GOMAXPROCS", "GOGC", "FOO", "LD_PRELOAD", "BOOSTER_TCP_NODELAY"}) {
          if (pick(3) == 0) c["env"].push_back({{"name", name}, {"value", absl::StrCat(pick(9))}});
        }
        if (c["env"].empty()) c.erase("env");
      }
      if (pick(2)) c["resources"] = {{"limits", {{"cpu", pick(2) ? "2" : "500m"}, {"memory", "1Gi"}}}};
      if (pick(3) == 0) c["volumeMounts"] = Json::parse(R"([{"name": "data", "mountPath": "/d"}])");
      spec["containers"].push_back(c);
    }
    if (pick(2)) spec["volumes"] = Json::parse(R"([{"name": "data", "emptyDir": {}}])");
    if (pick(2)) spec["securityContext"] = Json::object();
    if (pick(3) == 0) {
      spec["securityContext"]["sysctls"] =
          Json::parse(R"([{"name": "net.core.somaxconn", "value": "128"}])");
    }
    if (pick(3) == 0) spec["shareProcessNamespace"] = pick(2) == 0;
    Tuning tuning;
    if (pick(2)) tuning.go.gomaxprocs = pick(2) ? "auto" : "3";
    if (pick(2)) tuning.go.gogc = "200";
    if (pick(2)) tuning.sysctls["net.core.somaxconn"] = "4096";
    if (pick(2)) tuning.sysctls["net.ipv4.tcp_tw_reuse"] = "1";
    if (pick(2)) tuning.preload.tcp_no_delay = true;
    if (pick(3) == 0) tuning.preload.allocator = Allocator::kMimalloc;
    if (pick(3) == 0) tuning.placement = CpuPlacement::kPinned;
    absl::StatusOr<Json> enrolled = EnrolledTemplate(t, Ctx(), opts);
    absl::StatusOr<Json> tuned = TunedTemplate(t, tuning, kArmCanary, Ctx(), opts);
    ASSERT_TRUE(enrolled.ok() && tuned.ok()) << t.dump();
    ASSERT_EQ(TeamTemplate(*enrolled, opts), t) << "enrolled: " << enrolled->dump();
    ASSERT_EQ(TeamTemplate(*tuned, opts), t) << "tuned: " << tuned->dump();
    EXPECT_TRUE(LayerDifferences(*tuned, *tuned, opts).empty());
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

TEST(LayerDifferencesTest, NamesWhatSomeoneElsesChangeTookOff) {
  MutationOptions opts;
  Json promoted = *TunedTemplate(Original(), SampleTuning(), kArmPromoted, Ctx(), opts);
  EXPECT_THAT(LayerDifferences(promoted, promoted, opts), ::testing::IsEmpty());
  // A change elsewhere in the template is no difference; neither are the API server's
  // defaults in Booster's own containers.
  Json edited = promoted;
  edited["spec"]["containers"][0]["image"] = "shop/checkout:2";
  for (Json& c : edited["spec"]["containers"]) c["terminationMessagePath"] = "/dev/termination-log";
  EXPECT_THAT(LayerDifferences(edited, promoted, opts), ::testing::IsEmpty());

  // The team's value of a knob the tuning set.
  Json overridden = promoted;
  for (Json& e : overridden["spec"]["containers"][0]["env"]) {
    if (e["name"] == "GOMAXPROCS") e["value"] = "8";
  }
  EXPECT_THAT(LayerDifferences(overridden, promoted, opts),
              ::testing::ElementsAre("env GOMAXPROCS of container app is \"8\", not \"1\""));

  // Their manifest replaced the whole template: everything is named.
  std::vector<std::string> gone = LayerDifferences(Original(), promoted, opts);
  EXPECT_THAT(gone, ::testing::Contains("container booster-agent is missing"));
  EXPECT_THAT(gone, ::testing::Contains("volume booster is missing"));
  EXPECT_THAT(gone, ::testing::Contains("sysctl net.core.somaxconn is \"128\", not \"4096\""));
  EXPECT_THAT(gone, ::testing::Contains("label booster.dev/arm is missing, not promoted"));

  // The enrolled baseline is not the promoted tuning.
  Json enrolled = *EnrolledTemplate(Original(), Ctx(), opts);
  EXPECT_THAT(LayerDifferences(enrolled, promoted, opts),
              ::testing::Contains("label booster.dev/arm is baseline, not promoted"));
}

TEST(TeamTemplateTest, ATemplateFromBeforeTheLayerRecordLosesBoostersPartsByName) {
  MutationOptions opts;
  // What an operator without the record wrote: the tuned template, minus the record, with
  // the old shareProcessNamespace annotation.
  Json old = *TunedTemplate(Original(), SampleTuningWithout(), kArmPromoted, Ctx(), opts);
  old["metadata"]["annotations"].erase(kLayerAnnotation);
  old["metadata"]["annotations"][kSharedPidAnnotation] = "added";
  Json team = TeamTemplate(old, opts);
  EXPECT_FALSE(HasLayer(team));
  EXPECT_FALSE(IsEnrolled(team));
  const Json& app = Container(team, "app");
  EXPECT_EQ(Env(app, "LD_PRELOAD"), "<unset>");
  EXPECT_EQ(Env(app, "BOOSTER_LISTEN_BACKLOG"), "<unset>");
  EXPECT_EQ(Env(app, "GOMEMLIMIT"), "<unset>");
  // The value the team had under GOMAXPROCS is not known any more: the tuning's goes.
  EXPECT_EQ(Env(app, "GOMAXPROCS"), "<unset>");
  EXPECT_FALSE(team["spec"].contains("shareProcessNamespace"));
  EXPECT_EQ(team["spec"]["containers"][1], Original()["spec"]["containers"][1]);
}

TEST(EnrolledTemplateTest, RefusesATemplateThatUsesTheNamesOfBoostersParts) {
  Json t = Original();
  t["spec"]["volumes"] = Json::parse(R"([{"name": "booster", "emptyDir": {}}])");
  absl::StatusOr<Json> e = EnrolledTemplate(t, Ctx(), MutationOptions{});
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("already has a volume named \"booster\""));
}

TEST(TemplateTuningTest, IsTheTuningOfATunedTemplateOnly) {
  MutationOptions opts;
  EXPECT_EQ(TemplateTuning(*TunedTemplate(Original(), SampleTuning(), kArmPromoted, Ctx(), opts)),
            TuningToJson(SampleTuning()));
  EXPECT_EQ(TemplateTuning(*EnrolledTemplate(Original(), Ctx(), opts)), std::nullopt);
  EXPECT_EQ(TemplateTuning(Original()), std::nullopt);
}

TEST(MarkerTest, IdentifiesWhatTheOperatorWrote) {
  MutationOptions opts;
  Json enrolled = *EnrolledTemplate(Original(), Ctx(), opts);
  Json canary = *TunedTemplate(Original(), SampleTuning(), kArmCanary, Ctx(), opts);
  Json promoted = *TunedTemplate(Original(), SampleTuning(), kArmPromoted, Ctx(), opts);
  EXPECT_EQ(TemplateMarker(Original()), "");
  EXPECT_NE(TemplateMarker(enrolled), "");
  EXPECT_NE(TemplateMarker(enrolled), TemplateMarker(canary));
  EXPECT_NE(TemplateMarker(canary), TemplateMarker(promoted));
  Tuning other = SampleTuning();
  other.preload.listen_backlog = 1024;
  EXPECT_NE(TemplateMarker(*TunedTemplate(Original(), other, kArmCanary, Ctx(), opts)),
            TemplateMarker(canary));
  Json new_image = Original();
  new_image["spec"]["containers"][0]["image"] = "shop/checkout:1.5";
  EXPECT_NE(TemplateMarker(*EnrolledTemplate(new_image, Ctx(), opts)), TemplateMarker(enrolled));
  // The API server's defaulting changes the template but not the marker.
  Json defaulted = enrolled;
  defaulted["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log";
  EXPECT_EQ(TemplateMarker(defaulted), TemplateMarker(enrolled));
  EXPECT_NE(TemplateHash(defaulted), TemplateHash(enrolled));
}

TEST(FreshBaselineTemplateTest, OverAPromotedTuningItIsTheBaselineArmRunningThatTuning) {
  // A rollout after a promotion: the target runs the promoted tuning (arm promoted), which
  // the fresh baseline runs too, as the baseline arm (its Deployment selects arm=baseline;
  // the API server refused it as arm=promoted).
  MutationOptions opts;
  Json promoted = *TunedTemplate(Original(), SampleTuning(), kArmPromoted, Ctx(), opts);
  Json canary = *TunedTemplate(Original(), Tuning{}, kArmCanary, Ctx(), opts);
  Json fresh = FreshBaselineTemplate(promoted, canary);
  EXPECT_EQ(TemplateArm(fresh), kArmBaseline);
  EXPECT_EQ(TemplateTuning(fresh), TemplateTuning(promoted));
  std::string arm_env;
  for (const Json& c : fresh["spec"]["containers"]) {
    if (c.value("name", "") != kAgentContainer) continue;
    for (const Json& e : c["env"]) {
      if (e.value("name", "") == "BOOSTER_ARM") arm_env = e.value("value", "");
    }
  }
  EXPECT_EQ(arm_env, kArmBaseline);
}

TEST(FreshBaselineTemplateTest, TheBaselineTemplateLabelledNearTheCanaryAndSealedAnew) {
  MutationOptions opts;
  Json team = Original();
  // The team's own affinity stays; Booster's term comes after it.
  team["spec"]["affinity"] = Json::parse(R"json({"podAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}},
                                          "topologyKey": "topology.kubernetes.io/zone"}}]}})json");
  Json enrolled = *EnrolledTemplate(team, Ctx(), opts);
  Json canary = *TunedTemplate(team, SampleTuning(), kArmCanary, Ctx(), opts);
  Json fresh = FreshBaselineTemplate(enrolled, canary);
  EXPECT_EQ(fresh["metadata"]["labels"][kFreshBaselineLabel], "true");
  EXPECT_EQ(TemplateArm(fresh), kArmBaseline);
  const Json& terms =
      fresh["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0]["weight"], 5);
  EXPECT_EQ(terms[1]["weight"], 100);
  EXPECT_EQ(terms[1]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(terms[1]["podAffinityTerm"]["labelSelector"]["matchLabels"],
            canary["metadata"]["labels"]);
  EXPECT_EQ(terms[1]["podAffinityTerm"]["labelSelector"]["matchLabels"][kArmLabel], kArmCanary);
  // Pairs: the fresh baseline's pods repel each other as strongly, per node (50 counted
  // from both pods).
  const Json& anti = fresh["spec"]["affinity"]["podAntiAffinity"]
                          ["preferredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(anti.size(), 1u);
  EXPECT_EQ(anti[0]["weight"], 50);
  EXPECT_EQ(anti[0]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"],
            fresh["metadata"]["labels"]);
  EXPECT_EQ(anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"][kFreshBaselineLabel],
            "true");
  // Its own marker: the target's pods (the enrolled template) never count as its windows.
  EXPECT_NE(TemplateMarker(fresh), "");
  EXPECT_NE(TemplateMarker(fresh), TemplateMarker(enrolled));
  EXPECT_NE(TemplateMarker(fresh), TemplateMarker(canary));
  // The same inputs give the same template (Converge compares markers on every pass), and
  // the enrolled template is untouched apart from that.
  EXPECT_EQ(FreshBaselineTemplate(enrolled, canary), fresh);
  Json back = fresh;
  back["metadata"]["labels"].erase(kFreshBaselineLabel);
  back["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
      .erase(1);
  back["spec"]["affinity"].erase("podAntiAffinity");
  back["metadata"]["annotations"][kTemplateHashAnnotation] = TemplateMarker(enrolled);
  EXPECT_EQ(back, enrolled);
  // Without affinity of the team's, Booster's term is the only one.
  Json plain = FreshBaselineTemplate(*EnrolledTemplate(Original(), Ctx(), opts), canary);
  EXPECT_EQ(plain["spec"]["affinity"]["podAffinity"]
                 ["preferredDuringSchedulingIgnoredDuringExecution"].size(),
            1u);
}

TEST(AgentSettingsTest, TheAgentsWindowAndMetricsSourceAreCompared) {
  MutationOptions opts;
  EnrollContext ctx = Ctx();
  ctx.window = "5s";
  const Json enrolled = *EnrolledTemplate(Original(), ctx, opts);
  EXPECT_FALSE(AgentSettingsDiffer(enrolled, enrolled));
  EnrollContext longer = ctx;
  longer.window = "30s";
  const Json other_window = *EnrolledTemplate(Original(), longer, opts);
  EXPECT_TRUE(AgentSettingsDiffer(enrolled, other_window));
  // Not part of the layer: after promotion such an edit is not "the tuning removed".
  EXPECT_TRUE(LayerDifferences(enrolled, other_window, opts).empty());
  EnrollContext source = ctx;
  source.app_metrics = R"({"port":9090})";
  EXPECT_TRUE(AgentSettingsDiffer(enrolled, *EnrolledTemplate(Original(), source, opts)));
  // A template without the agent (not enrolled) has no settings to compare.
  EXPECT_FALSE(AgentSettingsDiffer(Original(), enrolled));
}

TEST(QuantityTest, CpuAndMemory) {
  EXPECT_EQ(ParseCpuMillis("500m"), 500);
  EXPECT_EQ(ParseCpuMillis("2"), 2000);
  EXPECT_EQ(ParseCpuMillis("1.5"), 1500);
  EXPECT_EQ(ParseCpuMillis("0.1"), 100);
  EXPECT_EQ(ParseCpuMillis("2Gi"), std::nullopt);
  EXPECT_EQ(ParseCpuMillis(""), std::nullopt);
  EXPECT_EQ(ParseBytes("512Mi"), 536870912);
  EXPECT_EQ(ParseBytes("1G"), 1000000000);
  EXPECT_EQ(ParseBytes("1e9"), 1000000000);
  EXPECT_EQ(ParseBytes("1.5Gi"), 1610612736);
  EXPECT_EQ(ParseBytes("128974848"), 128974848);
  EXPECT_EQ(ParseBytes("129M"), 129000000);
  EXPECT_EQ(ParseBytes("12Xi"), std::nullopt);
  EXPECT_EQ(ParseBytes("Mi"), std::nullopt);
}

}  // namespace
}  // namespace booster::rollout
