#include "sidecar/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

Topology Synthetic(const std::string& desc) {
  absl::StatusOr<Topology> t = LoadSyntheticTopology(desc);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

Limits Quota(double cores, const std::string& cpuset = "") {
  Limits l;
  l.cpu_quota_cores = cores;
  l.cpus = *ParseCpuList(cpuset);
  return l;
}

Plan MustPlan(const Topology& t, const Limits& l, PlacementPolicy p = {}) {
  absl::StatusOr<Plan> plan = PlanPlacement(t, l, p);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : Plan{};
}

// ---- 1 socket x 2 cores -----------------------------------------------------------

TEST(PlannerTest, TwoCoresNoQuotaUsesBoth) {
  Plan p = MustPlan(Synthetic("package:1 core:2 pu:1"), Limits{});
  EXPECT_THAT(p.cpus, ElementsAre(0, 1));
  EXPECT_THAT(p.memory_nodes, ElementsAre(0));
  EXPECT_EQ(p.gomaxprocs, 2);
  EXPECT_EQ(p.gomemlimit_bytes, 0u);
  EXPECT_EQ(p.malloc_arena_max, 2);
}

TEST(PlannerTest, TwoCoresOneCoreQuota) {
  Plan p = MustPlan(Synthetic("package:1 core:2 pu:1"), Quota(1));
  EXPECT_THAT(p.cpus, ElementsAre(0));
  EXPECT_EQ(p.gomaxprocs, 1);
  EXPECT_EQ(p.malloc_arena_max, 1);
}

TEST(PlannerTest, TwoCoresQuotaAboveMachineIsCapped) {
  Plan p = MustPlan(Synthetic("package:1 core:2 pu:1"), Quota(4));
  EXPECT_THAT(p.cpus, ElementsAre(0, 1));
  EXPECT_EQ(p.gomaxprocs, 2);
  EXPECT_FALSE(p.notes.empty());
}

// ---- fractional quotas ------------------------------------------------------------

TEST(PlannerTest, FractionalQuotas) {
  Topology t = Synthetic("package:1 core:8 pu:1");
  struct Case {
    double quota;
    size_t cpus;
    int gomaxprocs;
  };
  for (Case c :
       {Case{0.1, 1, 1}, Case{0.5, 1, 1}, Case{1.0, 1, 1}, Case{1.5, 2, 1}, Case{1.9999999, 2, 2},
        Case{2.0000001, 2, 2}, Case{2.5, 3, 2}, Case{7.25, 8, 7}, Case{100, 8, 8}}) {
    Plan p = MustPlan(t, Quota(c.quota));
    EXPECT_EQ(p.cpus.size(), c.cpus) << c.quota;
    EXPECT_EQ(p.gomaxprocs, c.gomaxprocs) << c.quota;
  }
}

// The operator's table (pod_template_test, common/go_runtime_test) on the e2e node's
// shape: 2 cores, one NUMA node. The agent knows the CPUs it grants, so "no limit" is 2.
TEST(PlannerTest, GoKnobsByTheOneRuleOnTwoCores) {
  Topology t = Synthetic("package:1 core:2 pu:1");
  struct Case {
    std::optional<double> quota;
    size_t cpus;
    int gomaxprocs;
  };
  for (Case c :
       {Case{0.5, 1, 1}, Case{1, 1, 1}, Case{1.5, 2, 1}, Case{2, 2, 2}, Case{std::nullopt, 2, 2}}) {
    Limits l;
    l.cpu_quota_cores = c.quota;
    l.memory_limit_bytes = 64u << 20;
    Plan p = MustPlan(t, l);
    EXPECT_EQ(p.cpus.size(), c.cpus) << c.quota.value_or(0);
    EXPECT_EQ(p.gomaxprocs, c.gomaxprocs) << c.quota.value_or(0);
    EXPECT_EQ(p.gomemlimit_bytes, 60397977u) << "90% of 64Mi, as the operator writes it";
  }
  PlacementPolicy p85;
  p85.gomemlimit_fraction = 0.85;
  Limits l;
  l.memory_limit_bytes = 64u << 20;
  EXPECT_EQ(MustPlan(t, l, p85).gomemlimit_bytes, 57042534u) << "the operator's \"85%\"";
}

// spread takes one hardware thread per core first; whole-cores packs both threads of a
// core before the next one: the same number of CPUs on the fewest cores.
TEST(PlannerTest, WholeCoresPacksSiblingsSpreadDoesNot) {
  Topology t = Synthetic("package:1 core:4 pu:2");  // core i = CPUs 2i, 2i+1
  Plan spread = MustPlan(t, Quota(2));
  EXPECT_THAT(spread.cpu_order, ElementsAre(0, 2));
  EXPECT_EQ(spread.whole_cores, 2);
  EXPECT_FALSE(spread.smt_siblings_used);
  PlacementPolicy pack;
  pack.pack_cores = true;
  Plan packed = MustPlan(t, Quota(2), pack);
  EXPECT_THAT(packed.cpu_order, ElementsAre(0, 1));
  EXPECT_EQ(packed.whole_cores, 1);
  EXPECT_TRUE(packed.smt_siblings_used);
  Plan three = MustPlan(t, Quota(2.5), pack);
  EXPECT_THAT(three.cpus, ElementsAre(0, 1, 2));
  EXPECT_EQ(three.whole_cores, 2);
  // Cores the container owns outright come first when packing too.
  Plan odd = MustPlan(t, Quota(2, "1-5"), pack);
  EXPECT_THAT(odd.cpu_order, ElementsAre(2, 3));
}

TEST(PlannerTest, RejectsNonPositiveQuotaAndBadFraction) {
  Topology t = Synthetic("package:1 core:2 pu:1");
  EXPECT_EQ(PlanPlacement(t, Quota(0), {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanPlacement(t, Quota(-1), {}).status().code(), absl::StatusCode::kInvalidArgument);
  PlacementPolicy bad;
  bad.gomemlimit_fraction = 1.5;
  EXPECT_EQ(PlanPlacement(t, Limits{}, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlannerTest, GomemlimitIsAFractionOfTheLimit) {
  Limits l;
  l.memory_limit_bytes = 1000 * 1024 * 1024;
  Plan p = MustPlan(Synthetic("package:1 core:2 pu:1"), l);
  EXPECT_EQ(p.gomemlimit_bytes, static_cast<uint64_t>(std::floor(1000.0 * 1024 * 1024 * 0.9)));
  PlacementPolicy half;
  half.gomemlimit_fraction = 0.5;
  EXPECT_EQ(MustPlan(Synthetic("package:1 core:2 pu:1"), l, half).gomemlimit_bytes,
            500u * 1024 * 1024);
}

// ---- 2 sockets x 2 NUMA nodes x 8 cores x 2 threads ---------------------------------

class BigMachineTest : public ::testing::Test {
 protected:
  Topology t_ = Synthetic("package:2 numa:2 core:8 pu:2");
};

TEST_F(BigMachineTest, FourCpusAreFourWholeCoresOnNodeZero) {
  Plan p = MustPlan(t_, Quota(4));
  EXPECT_THAT(p.cpus, ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(p.memory_nodes, ElementsAre(0));
  EXPECT_EQ(p.whole_cores, 4);
  EXPECT_FALSE(p.smt_siblings_used);
  EXPECT_FALSE(p.cross_numa);
  EXPECT_EQ(p.gomaxprocs, 4);
}

TEST_F(BigMachineTest, TwelveCpusUseSiblingsOnlyAfterAllCoresOfTheNode) {
  Plan p = MustPlan(t_, Quota(12));
  EXPECT_EQ(p.cpus.size(), 12u);
  EXPECT_EQ(p.whole_cores, 8);
  EXPECT_TRUE(p.smt_siblings_used);
  EXPECT_THAT(p.memory_nodes, ElementsAre(0));
  // The order gives every core its first thread before any sibling.
  EXPECT_THAT(std::vector<int>(p.cpu_order.begin(), p.cpu_order.begin() + 8),
              ElementsAre(0, 2, 4, 6, 8, 10, 12, 14));
  EXPECT_THAT(std::vector<int>(p.cpu_order.begin() + 8, p.cpu_order.end()),
              ElementsAre(1, 3, 5, 7));
}

TEST_F(BigMachineTest, TwentyCpusCappedToOneNodeUnlessAsked) {
  Plan p = MustPlan(t_, Quota(20));
  EXPECT_EQ(p.cpus.size(), 16u);
  EXPECT_FALSE(p.cross_numa);
  EXPECT_THAT(p.memory_nodes, ElementsAre(0));
  EXPECT_EQ(p.gomaxprocs, 16);
  EXPECT_THAT(p.notes.back(), ::testing::HasSubstr("capped at 16"));

  PlacementPolicy cross;
  cross.allow_cross_numa = true;
  Plan q = MustPlan(t_, Quota(20), cross);
  EXPECT_EQ(q.cpus.size(), 20u);
  EXPECT_TRUE(q.cross_numa);
  EXPECT_THAT(q.memory_nodes, ElementsAre(0, 1));
  // Whole cores of both nodes before siblings: 16 cores, then 4 siblings.
  EXPECT_EQ(q.whole_cores, 16);
  EXPECT_EQ(q.gomaxprocs, 20);
}

TEST_F(BigMachineTest, CrossNumaGrowsToTheNearestNode) {
  // Make node 3 (other socket) nearer to node 0 than node 1 is.
  t_.distances = {{10, 30, 40, 15}, {30, 10, 15, 40}, {40, 15, 10, 30}, {15, 40, 30, 10}};
  t_.distances_measured = true;
  PlacementPolicy cross;
  cross.allow_cross_numa = true;
  Plan p = MustPlan(t_, Quota(24), cross);
  EXPECT_THAT(p.memory_nodes, ElementsAre(0, 3));
  for (int cpu : p.cpus) EXPECT_TRUE(cpu < 16 || cpu >= 48) << cpu;
}

TEST_F(BigMachineTest, CpusetOnOneNodeKeepsPlacementAndMemoryThere) {
  Plan p = MustPlan(t_, Quota(2, "16-31"));
  EXPECT_THAT(p.cpus, ElementsAre(16, 18));
  EXPECT_THAT(p.memory_nodes, ElementsAre(1));
}

TEST_F(BigMachineTest, PicksTheNodeWhereWholeCoresFit) {
  // Node 0 offers 3 CPUs on 2 cores, node 1 offers 2 whole cores' first threads + more.
  Plan p = MustPlan(t_, Quota(3, "0-2,16,18,20"));
  EXPECT_THAT(p.cpus, ElementsAre(16, 18, 20));
  EXPECT_FALSE(p.smt_siblings_used);
}

TEST_F(BigMachineTest, MemoryNodesNeverLeaveCpusetMems) {
  Limits l = Quota(2, "16-31");
  l.mems = {0};
  Plan p = MustPlan(t_, l);
  EXPECT_THAT(p.memory_nodes, IsEmpty());
  EXPECT_THAT(p.notes.back(), ::testing::HasSubstr("no memory binding"));
}

TEST_F(BigMachineTest, CpusetOutsideTheMachineIsAnError) {
  absl::StatusOr<Plan> p = PlanPlacement(t_, Quota(1, "200-201"), {});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), ::testing::HasSubstr("200-201"));
}

// ---- Linux numbering: siblings are N apart ----------------------------------------

TEST(PlannerTest, LinuxNumberingPrefersDistinctCores) {
  std::string idx;
  for (int c = 0; c < 8; ++c) absl::StrAppend(&idx, c == 0 ? "" : ",", c, ",", c + 8);
  Topology t = Synthetic(absl::StrCat("package:1 core:8 pu:2(indexes=", idx, ")"));
  Plan p = MustPlan(t, Quota(4));
  EXPECT_THAT(p.cpus, ElementsAre(0, 1, 2, 3));
  Plan q = MustPlan(t, Quota(10));
  EXPECT_THAT(q.cpus, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

// ---- odd cpusets -------------------------------------------------------------------

TEST(PlannerTest, OddCpusets) {
  Topology t = Synthetic("package:1 core:4 pu:2");  // core k = {2k, 2k+1}
  // A whole core and a half core: one thread of each before the sibling.
  EXPECT_THAT(MustPlan(t, Quota(2, "0,1,3")).cpus, ElementsAre(0, 3));
  // Only half cores.
  EXPECT_THAT(MustPlan(t, Quota(2, "1,3,5")).cpus, ElementsAre(1, 3));
  // A core owned outright is preferred over one shared with another container.
  EXPECT_THAT(MustPlan(t, Quota(1, "3,4,5")).cpus, ElementsAre(4));
  // Siblings only when no free core is left.
  Plan p = MustPlan(t, Quota(3, "0,1,3"));
  EXPECT_THAT(p.cpus, ElementsAre(0, 1, 3));
  EXPECT_TRUE(p.smt_siblings_used);
  // No quota: everything allowed.
  EXPECT_THAT(MustPlan(t, Quota(100, "7,2")).cpus, ElementsAre(2, 7));
}

// ---- 8 NUMA nodes ----------------------------------------------------------------

TEST(PlannerTest, EightNodesPickTheNodeWithMostRoom) {
  Topology t = Synthetic("numa:8 core:4 pu:2");  // node n = CPUs 8n..8n+7
  ASSERT_EQ(t.numa_nodes.size(), 8u);
  EXPECT_THAT(MustPlan(t, Quota(3)).memory_nodes, ElementsAre(0));
  // Nodes 0 and 1 are partly allowed; node 2 wholly: 4 cores fit only on node 2.
  Plan p = MustPlan(t, Quota(4, "0-3,8-13,16-23"));
  EXPECT_THAT(p.memory_nodes, ElementsAre(2));
  EXPECT_THAT(p.cpus, ElementsAre(16, 18, 20, 22));
  // 40 CPUs across nodes when asked: 5 nodes, all 20 cores before any sibling... capped
  // to 40 CPUs = 5 nodes x 8.
  PlacementPolicy cross;
  cross.allow_cross_numa = true;
  Plan q = MustPlan(t, Quota(40), cross);
  EXPECT_EQ(q.cpus.size(), 40u);
  EXPECT_EQ(q.memory_nodes.size(), 5u);
}

// ---- invariants over many synthetic machines, quotas and cpusets ---------------------

TEST(PlannerTest, InvariantsHoldEverywhere) {
  const std::vector<std::string> machines = {
      "package:1 core:2 pu:1", "package:1 core:4 pu:2", "package:2 numa:2 core:8 pu:2",
      "numa:8 core:4 pu:2",    "package:2 core:3 pu:4", "package:4 numa:1 core:2 pu:1"};
  std::mt19937 rng(12345);
  int plans = 0;
  for (const std::string& m : machines) {
    Topology t = Synthetic(m);
    std::vector<int> all = t.Cpus();
    for (int trial = 0; trial < 300; ++trial) {
      Limits l;
      // Random non-empty cpuset (or none), random quota (or none), random cross flag.
      if (trial % 4 != 0) {
        for (int cpu : all) {
          if (rng() % 3 != 0) l.cpus.push_back(cpu);
        }
        if (l.cpus.empty()) l.cpus.push_back(all[rng() % all.size()]);
      }
      if (trial % 5 != 0) l.cpu_quota_cores = 0.05 + (rng() % 4000) / 100.0;
      PlacementPolicy policy;
      policy.allow_cross_numa = rng() % 2 == 0;
      absl::StatusOr<Plan> pr = PlanPlacement(t, l, policy);
      ASSERT_TRUE(pr.ok()) << m << " " << pr.status();
      const Plan& p = *pr;
      ++plans;
      std::string ctx = absl::StrCat(m, " cpuset=", FormatCpuList(l.cpus),
                                     " quota=", l.cpu_quota_cores ? *l.cpu_quota_cores : -1);
      std::vector<int> allowed = l.cpus.empty() ? all : l.cpus;
      // Never outside the cpuset; never empty; order is a permutation of the set.
      ASSERT_FALSE(p.cpus.empty()) << ctx;
      for (int c : p.cpus) {
        ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), c)) << ctx;
      }
      ASSERT_THAT(p.cpu_order, UnorderedElementsAreArray(p.cpus)) << ctx;
      ASSERT_TRUE(std::is_sorted(p.cpus.begin(), p.cpus.end())) << ctx;
      // Size: ceil(quota) capped by the allowed CPUs (and one node unless crossing).
      size_t want = allowed.size();
      if (l.cpu_quota_cores) {
        want = std::min(want, static_cast<size_t>(std::ceil(*l.cpu_quota_cores - 1e-6)));
      }
      ASSERT_LE(p.cpus.size(), want) << ctx;
      if (policy.allow_cross_numa) {
        ASSERT_EQ(p.cpus.size(), want) << ctx;
      }
      // GOMAXPROCS in [1, |cpus|] and never above the quota's whole cores (min 1).
      ASSERT_GE(p.gomaxprocs, 1) << ctx;
      ASSERT_LE(p.gomaxprocs, static_cast<int>(p.cpus.size())) << ctx;
      if (l.cpu_quota_cores) {
        ASSERT_LE(p.gomaxprocs, std::max(1, static_cast<int>(*l.cpu_quota_cores + 1e-6))) << ctx;
      }
      // Memory nodes are exactly the nodes of the chosen CPUs.
      std::set<int> nodes;
      std::map<int, int> core_of;
      std::map<int, int> node_of;
      for (const Core& c : t.cores) {
        for (int cpu : c.cpus) {
          core_of[cpu] = c.index;
          node_of[cpu] = c.numa_node;
        }
      }
      for (int c : p.cpus) nodes.insert(node_of[c]);
      ASSERT_THAT(p.memory_nodes, ::testing::ElementsAreArray(nodes)) << ctx;
      if (!policy.allow_cross_numa) {
        ASSERT_EQ(nodes.size(), 1u) << ctx;
      }
      // Whole cores first: a sibling is used only when every allowed core of the chosen
      // nodes already has a CPU in the plan.
      std::map<int, int> per_core;
      for (int c : p.cpus) per_core[core_of[c]]++;
      bool sibling_used = false;
      for (const auto& [core, n] : per_core) sibling_used |= n > 1;
      ASSERT_EQ(sibling_used, p.smt_siblings_used) << ctx;
      if (sibling_used) {
        for (int a : allowed) {
          if (nodes.count(node_of[a]) != 0) {
            ASSERT_TRUE(per_core.count(core_of[a]) != 0)
                << ctx << ": core of CPU " << a << " left idle while a sibling is used";
          }
        }
      }
      // The first threads in the order are on distinct cores.
      std::set<int> seen;
      for (size_t i = 0; i < std::min<size_t>(p.cpu_order.size(), per_core.size()); ++i) {
        ASSERT_TRUE(seen.insert(core_of[p.cpu_order[i]]).second) << ctx;
      }
    }
  }
  EXPECT_EQ(plans, 1800);
}

}  // namespace
}  // namespace booster::agent
