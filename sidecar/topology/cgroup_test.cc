#include "sidecar/topology/cgroup.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/testing/testdata.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;

using ::booster::agent_testing::Fixture;

TEST(CgroupTest, ParsesV1ProcCgroupAndMounts) {
  absl::StatusOr<std::vector<CgroupEntry>> e = ParseProcCgroup(Fixture("proc_cgroup.txt"));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->size(), 10u);
  EXPECT_EQ((*e)[9].hierarchy, 0);
  EXPECT_TRUE((*e)[9].controllers.empty());
  absl::StatusOr<std::vector<CgroupMount>> m = ParseCgroupMounts(Fixture("mountinfo.txt"));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 10u);  // the ext4 root line is skipped
  EXPECT_EQ((*m)[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_THAT((*m)[0].controllers, ElementsAre("cpu"));
  EXPECT_TRUE((*m)[9].v2);

  CgroupPaths p = ResolveCgroupPaths(*m, *e);
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.cpu, "/sys/fs/cgroup/cpu/booster-fixture-5329");
  EXPECT_EQ(p.cpuacct, "/sys/fs/cgroup/cpuacct");
  EXPECT_EQ(p.cpuset, "/sys/fs/cgroup/cpuset/booster-fixture-5329");
  EXPECT_EQ(p.memory, "/sys/fs/cgroup/memory/booster-fixture-5329");
  EXPECT_FALSE(p.cpu_is_root);
  std::vector<CgroupEntry> root = {{1, {"cpu"}, "/"}};
  EXPECT_TRUE(ResolveCgroupPaths(*m, root).cpu_is_root);
}

TEST(CgroupTest, ResolvesV2) {
  CgroupPaths p = ResolveCgroupPaths(*ParseCgroupMounts(Fixture("v2_mountinfo.txt")),
                                     *ParseProcCgroup(Fixture("v2_proc_cgroup.txt")));
  EXPECT_EQ(p.version, 2);
  EXPECT_EQ(p.cpu,
            "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
            "kubepods-burstable-pod1234.slice/cri-containerd-abcd.scope");
  EXPECT_EQ(p.memory, p.cpu);
}

TEST(CgroupTest, ContainerMountShowingOnlyItsOwnCgroup) {
  // Inside a container the mount root is the container's cgroup: its own processes and
  // their sub-cgroups resolve under it.
  std::vector<CgroupMount> m = {{"/sys/fs/cgroup/cpu", "/kubepods/pod1/c1", false, {"cpu"}}};
  std::vector<CgroupEntry> e = {{1, {"cpu"}, "/kubepods/pod1/c1"}};
  EXPECT_EQ(ResolveCgroupPaths(m, e).cpu, "/sys/fs/cgroup/cpu");
  e[0].path = "/kubepods/pod1/c1/sub";
  EXPECT_EQ(ResolveCgroupPaths(m, e).cpu, "/sys/fs/cgroup/cpu/sub");
  // A process at the root of a cgroup namespace ("/") is in the mount's cgroup.
  e[0].path = "/";
  EXPECT_EQ(ResolveCgroupPaths(m, e).cpu, "/sys/fs/cgroup/cpu");
}

TEST(CgroupTest, ASiblingContainersCgroupIsNotTheReadersOwn) {
  // The agent's container shows its own cgroup only; the app's container is a sibling.
  // Reading the agent's own counters for the app measured the agent (CPU per request 100x
  // too small on the e2e cluster): a sibling is not found, and the sampler falls back to
  // the app's processes' own CPU time.
  std::vector<CgroupMount> m = {{"/sys/fs/cgroup/cpu", "/kubepods/pod1/agent", false, {"cpu"}},
                                {"/sys/fs/cgroup/cpuacct", "/kubepods/pod1/agent", false,
                                 {"cpuacct"}}};
  std::vector<CgroupEntry> e = {{1, {"cpu"}, "/kubepods/pod1/app"},
                                {2, {"cpuacct"}, "/kubepods/pod1/app"}};
  CgroupPaths p = ResolveCgroupPaths(m, e);
  EXPECT_EQ(p.cpu, "");
  EXPECT_EQ(p.cpuacct, "");
  EXPECT_EQ(p.version, 0);
  // A name that merely starts like the mount's root is a sibling too.
  e[0].path = "/kubepods/pod1/agent2";
  EXPECT_EQ(ResolveCgroupPaths(m, e).cpu, "");
  // Through a cgroup namespace the sibling reads "/../app".
  std::vector<CgroupMount> ns = {{"/sys/fs/cgroup", "/", true, {}}};
  std::vector<CgroupEntry> v2 = {{0, {}, "/../app"}};
  EXPECT_EQ(ResolveCgroupPaths(ns, v2).cpu, "");
}

TEST(CgroupTest, ParsesV1Limits) {
  absl::StatusOr<std::optional<double>> q =
      ParseCfsQuota(Fixture("v1_cpu.cfs_quota_us"), Fixture("v1_cpu.cfs_period_us"));
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE(q->has_value());
  EXPECT_DOUBLE_EQ(**q, 0.5);
  EXPECT_FALSE(ParseCfsQuota("-1\n", "100000\n")->has_value());
  EXPECT_FALSE(ParseCfsQuota("x", "100000").ok());

  absl::StatusOr<std::optional<uint64_t>> mem =
      ParseMemoryLimit(Fixture("v1_memory.limit_in_bytes"));
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(mem->value(), 268435456u);
  EXPECT_FALSE(ParseMemoryLimit(Fixture("v1_memory.limit_in_bytes.unlimited"))->has_value());
}

TEST(CgroupTest, ParsesV2Limits) {
  int64_t quota = 0;
  int64_t period = 0;
  absl::StatusOr<std::optional<double>> c = ParseCpuMax(Fixture("v2_cpu.max"), &quota, &period);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->value(), 1.5);
  EXPECT_EQ(quota, 150000);
  EXPECT_EQ(period, 100000);
  EXPECT_FALSE(ParseCpuMax(Fixture("v2_cpu.max.unlimited"), &quota, &period)->has_value());
  EXPECT_EQ(quota, -1);
  EXPECT_FALSE(ParseCpuMax("0 100000", &quota, &period).ok());
  EXPECT_FALSE(ParseCpuMax("", &quota, &period).ok());
  EXPECT_EQ(ParseMemoryLimit(Fixture("v2_memory.max"))->value(), 536870912u);
  EXPECT_FALSE(ParseMemoryLimit(Fixture("v2_memory.max.unlimited"))->has_value());
}

TEST(CgroupTest, ParsesCpuStatBothVersions) {
  absl::StatusOr<CpuStat> v1 = ParseCpuStat(Fixture("v1_cpu.stat"));
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->nr_periods, 11u);
  EXPECT_EQ(v1->nr_throttled, 10u);
  EXPECT_EQ(v1->throttled_ns, 317931321u);
  EXPECT_FALSE(v1->usage_ns.has_value());

  absl::StatusOr<CpuStat> v2 = ParseCpuStat(Fixture("v2_cpu.stat.throttled"));
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->nr_throttled, 314u);
  EXPECT_EQ(v2->throttled_ns, 20861433000u);
  EXPECT_EQ(v2->usage_ns.value(), 8277392000u);

  absl::StatusOr<CpuStat> root = ParseCpuStat(Fixture("v2_cpu.stat"));
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->nr_periods, 0u);
  EXPECT_TRUE(root->usage_ns.has_value());
  EXPECT_FALSE(ParseCpuStat("nr_periods x").ok());
}

TEST(CgroupTest, ReadsThisProcessLimits) {
  absl::StatusOr<CgroupPaths> p = FindCgroups("/proc", getpid());
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<Limits> l = ReadLimits(*p);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_NE(l->cgroup_version, 0);
  EXPECT_FALSE(l->cpus.empty());
}

}  // namespace
}  // namespace booster::agent
