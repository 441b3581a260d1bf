#include "operator/rollout/go_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;

Json Container(const std::string& cpu_limit, Json env = Json::array()) {
  Json c = {{"name", "app"}, {"image", "shop/checkout:1"}, {"env", env}};
  if (!cpu_limit.empty()) c["resources"]["limits"]["cpu"] = cpu_limit;
  return c;
}

Json Template(const std::vector<Json>& containers) {
  Json t = {{"spec", {{"containers", Json::array()}}}};
  for (const Json& c : containers) t["spec"]["containers"].push_back(c);
  return t;
}

Json Env(const std::string& name, const std::string& value) {
  return Json::array({{{"name", name}, {"value", value}}});
}

const GoFacts kGo126{.version = "go1.26.0", .cpus = 2, .default_godebug = ""};

TEST(GoFactsTest, MinorVersion) {
  EXPECT_EQ(GoMinorVersion("go1.26.0"), 26);
  EXPECT_EQ(GoMinorVersion("go1.25rc1"), 25);
  EXPECT_EQ(GoMinorVersion("go1.9"), 9);
  EXPECT_EQ(GoMinorVersion("devel go1.27-abc"), std::nullopt);
  EXPECT_EQ(GoMinorVersion(""), std::nullopt);
  EXPECT_EQ(GoMinorVersion("go2.0"), std::nullopt);
}

TEST(GoFactsTest, DefaultFollowsGoRules) {
  // Go 1.25+: the limit rounded up, at least 2, at most the CPUs.
  EXPECT_EQ(GoDefaultMaxProcs(Container("500m"), kGo126), 2);
  EXPECT_EQ(GoDefaultMaxProcs(Container("1500m"), {.version = "go1.26.0", .cpus = 8}), 2);
  EXPECT_EQ(GoDefaultMaxProcs(Container("2500m"), {.version = "go1.26.0", .cpus = 8}), 3);
  EXPECT_EQ(GoDefaultMaxProcs(Container("4"), kGo126), 2);
  EXPECT_EQ(GoDefaultMaxProcs(Container(""), kGo126), 2);  // no limit: the CPUs
  // Before 1.25, and with the cgroup rule off (env over the binary's default): the CPUs.
  EXPECT_EQ(GoDefaultMaxProcs(Container("1", Json::array()), {.version = "go1.24.3", .cpus = 8}), 8);
  GoFacts old_module = {.version = "go1.26.0", .cpus = 8, .default_godebug = "containermaxprocs=0"};
  EXPECT_EQ(GoDefaultMaxProcs(Container("1"), old_module), 8);
  EXPECT_EQ(GoDefaultMaxProcs(Container("1", Env("GODEBUG", "containermaxprocs=1")), old_module), 2);
  EXPECT_EQ(GoDefaultMaxProcs(Container("1", Env("GODEBUG", "x=1,containermaxprocs=0")),
                              {.version = "go1.26.0", .cpus = 8}),
            8);
  // Unknown: no version, no CPU count, a GODEBUG the operator cannot read.
  EXPECT_EQ(GoDefaultMaxProcs(Container("1"), {.version = "", .cpus = 2}), std::nullopt);
  EXPECT_EQ(GoDefaultMaxProcs(Container("1"), {.version = "go1.26.0", .cpus = 0}), std::nullopt);
  Json from = Json::array({{{"name", "GODEBUG"}, {"valueFrom", {{"configMapKeyRef", {}}}}}});
  EXPECT_EQ(GoDefaultMaxProcs(Container("1", from), kGo126), std::nullopt);
}

TEST(GoFactsTest, EnvironmentWins) {
  EXPECT_EQ(GoMaxProcsIn(Container("1", Env("GOMAXPROCS", "1")), kGo126), 1);
  EXPECT_EQ(GoMaxProcsIn(Container("1", Env("GOMAXPROCS", "")), kGo126), 2);
  EXPECT_EQ(GoMaxProcsIn(Container("1", Env("GOMAXPROCS", "two")), kGo126), std::nullopt);
  EXPECT_EQ(GoMaxProcsIn(Container("1"), kGo126), 2);
}

TEST(GoFactsTest, NoOpWhenTheTunedValueIsGosOwn) {
  const Json base = Template({Container("1")});
  // GOMAXPROCS=2 under a 1-CPU limit on a 2-CPU node: Go 1.26 runs 2 already.
  const Json two = Template({Container("1", Env("GOMAXPROCS", "2"))});
  const std::string why = GoMaxProcsNoOp(base, two, {}, kGo126);
  EXPECT_THAT(why, HasSubstr("GOMAXPROCS 2 is what the go1.26.0 program already runs with in "
                             "container app"));
  EXPECT_THAT(why, HasSubstr("CPU limit 1000m"));
  // GOMAXPROCS=1 (what `auto` sets for 1 CPU) changes it.
  EXPECT_EQ(GoMaxProcsNoOp(base, Template({Container("1", Env("GOMAXPROCS", "1"))}), {}, kGo126),
            "");
  // Go 1.24 runs the 2 CPUs too: still a no-op, said so.
  EXPECT_THAT(GoMaxProcsNoOp(base, two, {}, {.version = "go1.24.1", .cpus = 2}),
              HasSubstr("Go's own default: the 2 CPUs"));
  // Nothing known, nothing claimed.
  EXPECT_EQ(GoMaxProcsNoOp(base, two, {}, {.version = "", .cpus = 2}), "");
  // The same template: the tuning did not set it, so it is no knob of this tuning.
  EXPECT_EQ(GoMaxProcsNoOp(base, base, {}, kGo126), "");
}

TEST(GoFactsTest, NoOpLooksAtEveryTunedContainerAndSkipsBoostersOwn) {
  Json side = Container("1", Env("GOMAXPROCS", "1"));
  side["name"] = "sidecar";
  Json agent = Container("", Env("GOMAXPROCS", "1"));
  agent["name"] = "booster-agent";
  const Json base = Template({Container("1"), Container("")});
  Json base2 = Template({Container("1"), side});
  Json tuned2 = Template({Container("1", Env("GOMAXPROCS", "2")), side, agent});
  EXPECT_THAT(GoMaxProcsNoOp(base2, tuned2, {}, kGo126), HasSubstr("containers app, sidecar"));
  Json side_changed = side;
  side_changed["env"] = Env("GOMAXPROCS", "2");
  Json tuned3 = Template({Container("1", Env("GOMAXPROCS", "2")), side_changed});
  EXPECT_EQ(GoMaxProcsNoOp(base2, tuned3, {}, kGo126), "");  // sidecar goes 1 -> 2
  EXPECT_THAT(GoMaxProcsNoOp(base2, tuned3, {"app"}, kGo126), HasSubstr("container app "));
  // A container the base does not have: cannot be told.
  EXPECT_EQ(GoMaxProcsNoOp(Template({side}), tuned2, {}, kGo126), "");
  (void)base;
}

TEST(GoFactsTest, ProgramKeyIsTheAppImagesAndLeavesBoostersOwnOut) {
  const Json a = Json::parse(R"({"spec": {"containers": [
      {"name": "web", "image": "web:1"}, {"name": "side", "image": "proxy:3"},
      {"name": "booster-agent", "image": "agent:1"}]}})");
  EXPECT_EQ(ProgramKey(a), "web=web:1,side=proxy:3");
  Json b = a;
  b["spec"]["containers"][2]["image"] = "agent:2";  // a new agent: the same program
  EXPECT_EQ(ProgramKey(b), ProgramKey(a));
  b["spec"]["containers"][0]["image"] = "web:2";  // a release: another program
  EXPECT_NE(ProgramKey(b), ProgramKey(a));
  EXPECT_EQ(ProgramKey(Json::object()), "");
}

}  // namespace
}  // namespace booster::rollout
