#include "sidecar/topology/topology.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;

TEST(TopologyTest, SyntheticTwoSocketsFourNodesSmt) {
  absl::StatusOr<Topology> t = LoadSyntheticTopology("package:2 numa:2 core:8 pu:2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->packages, 2);
  EXPECT_EQ(t->cores.size(), 32u);
  ASSERT_EQ(t->numa_nodes.size(), 4u);
  EXPECT_EQ(t->Cpus().size(), 64u);
  EXPECT_THAT(t->cores[0].cpus, ElementsAre(0, 1));
  EXPECT_EQ(t->cores[0].threads_total, 2);
  EXPECT_EQ(t->cores[8].numa_node, 1);
  EXPECT_EQ(t->cores[16].package, 1);
  EXPECT_EQ(t->numa_nodes[3].cpus.front(), 48);
  ASSERT_EQ(t->distances.size(), 4u);
  EXPECT_EQ(t->distances[0][0], 10u);
  EXPECT_EQ(t->distances[0][1], 20u);
  EXPECT_FALSE(t->distances_measured);
}

TEST(TopologyTest, LinuxStyleNumberingKeepsSiblingsApart) {
  // Threads 0-3 are the first threads of the four cores, 4-7 their siblings.
  absl::StatusOr<Topology> t =
      LoadSyntheticTopology("package:1 core:4 pu:2(indexes=0,4,1,5,2,6,3,7)");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->cores.size(), 4u);
  EXPECT_THAT(t->cores[1].cpus, ElementsAre(1, 5));
}

TEST(TopologyTest, CachesAreReported) {
  absl::StatusOr<Topology> t = LoadSyntheticTopology("package:1 l3:1 l2:2 core:1 pu:2");
  ASSERT_TRUE(t.ok()) << t.status();
  int l3 = 0;
  int l2 = 0;
  for (const Cache& c : t->caches) {
    if (c.level == 3) {
      ++l3;
      EXPECT_EQ(c.cpus.size(), 4u);
    }
    if (c.level == 2) ++l2;
  }
  EXPECT_EQ(l3, 1);
  EXPECT_EQ(l2, 2);
}

TEST(TopologyTest, RejectsBadDescription) {
  absl::StatusOr<Topology> t = LoadSyntheticTopology("banana:3");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TopologyTest, RestrictDropsCoresAndFiltersNodes) {
  Topology t = *LoadSyntheticTopology("package:1 numa:2 core:2 pu:2");
  Topology r = RestrictTopology(t, {1, 4, 5});
  ASSERT_EQ(r.cores.size(), 2u);
  EXPECT_THAT(r.cores[0].cpus, ElementsAre(1));
  EXPECT_EQ(r.cores[0].threads_total, 2);
  EXPECT_THAT(r.cores[1].cpus, ElementsAre(4, 5));
  EXPECT_THAT(r.numa_nodes[0].cpus, ElementsAre(1));
  EXPECT_THAT(r.numa_nodes[1].cpus, ElementsAre(4, 5));
  EXPECT_THAT(r.Cpus(), ElementsAre(1, 4, 5));
  EXPECT_EQ(RestrictTopology(t, {}).Cpus().size(), 8u);
}

TEST(TopologyTest, HostTopologyHasThisProcessCpus) {
  absl::StatusOr<Topology> t = LoadHostTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GE(t->Cpus().size(), 1u);
  EXPECT_GE(t->numa_nodes.size(), 1u);
  EXPECT_EQ(t->source, "this machine");
}

}  // namespace
}  // namespace booster::agent
