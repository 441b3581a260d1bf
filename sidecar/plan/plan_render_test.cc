#include "sidecar/plan/plan_render.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/json_line.h"

namespace booster::agent {
namespace {

Topology Synthetic(const std::string& desc) {
  absl::StatusOr<Topology> t = LoadSyntheticTopology(desc);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Topology{};
}

// The example of docs/agent.md ("Commands"), as `booster-agent plan --json` prints it
// (there wrapped for reading): `--cpu-quota 5.5 --memory-limit 1073741824` on
// "package:2 numa:2 core:8 pu:2".
TEST(PlanRenderTest, PlanJsonIsTheDocumentedLine) {
  Limits l;
  l.cpu_quota_cores = 5.5;
  l.cfs_period_us = 100000;
  l.cfs_quota_us = 550000;
  l.memory_limit_bytes = 1073741824;
  absl::StatusOr<Plan> plan =
      PlanPlacement(Synthetic("package:2 numa:2 core:8 pu:2"), l, PlacementPolicy{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(JsonLine(PlanJson(*plan)),
            R"({"cpus":[0,2,4,6,8,10],"cpu_list":"0,2,4,6,8,10","cpu_order":[0,2,4,6,8,10],)"
            R"("memory_nodes":[0],"whole_cores":6,"smt_siblings_used":false,"cross_numa":false,)"
            R"("cpus_wanted":6,"gomaxprocs":5,"gomemlimit":966367641,"malloc_arena_max":6,)"
            R"("env":{"GOMAXPROCS":"5","GOMEMLIMIT":"966367641","MALLOC_ARENA_MAX":"6"},)"
            R"("notes":["CPU quota 5.5 cores -> 6 CPUs"]})");
}

TEST(PlanRenderTest, TopologyJsonSaysNoLimitWithNull) {
  nlohmann::ordered_json j = TopologyJson(Synthetic("package:1 core:2 pu:2"), Limits{});
  EXPECT_EQ(j["packages"], 1);
  EXPECT_EQ(j["cpus"], nlohmann::ordered_json({0, 1, 2, 3}));
  ASSERT_EQ(j["cores"].size(), 2u);
  EXPECT_EQ(j["cores"][0]["cpus"], nlohmann::ordered_json({0, 1}));
  ASSERT_EQ(j["numa_nodes"].size(), 1u);
  EXPECT_TRUE(j["numa_nodes"][0]["distances"].is_array());
  EXPECT_TRUE(j["limits"]["cpu_quota_cores"].is_null());
  EXPECT_TRUE(j["limits"]["memory_limit_bytes"].is_null());
  EXPECT_EQ(j["limits"]["cpuset"], "");
  EXPECT_EQ(j.begin().key(), "source") << "keys in the order written";
}

}  // namespace
}  // namespace booster::agent
