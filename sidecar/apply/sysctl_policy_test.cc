#include "sidecar/apply/sysctl_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;

TEST(SysctlPolicyTest, AllowsNamespacedKeys) {
  for (const char* k :
       {"net.core.somaxconn", "net.ipv4.tcp_tw_reuse", "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_rmem", "net.ipv6.conf.all.disable_ipv6", "kernel.shmmax",
        "kernel.shm_rmid_forced", "kernel.msgmnb", "kernel.sem", "fs.mqueue.msg_max"}) {
    EXPECT_TRUE(CheckSysctl(k).ok()) << k << ": " << CheckSysctl(k);
  }
}

TEST(SysctlPolicyTest, RefusesNodeWideKeysWithAClearMessage) {
  absl::Status s = CheckSysctl("vm.swappiness");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("vm.swappiness is not namespaced"));
  EXPECT_THAT(s.message(), HasSubstr("net.*"));
  for (const char* k :
       {"kernel.pid_max", "fs.file-max", "kernel.sched_migration_cost_ns", "kernel.semx",
        "net.core.rmem_max", "net.ipv4.tcp_mem", "net.core.netdev_max_backlog"}) {
    EXPECT_FALSE(CheckSysctl(k).ok()) << k;
  }
  EXPECT_THAT(CheckSysctl("net.core.rmem_max").message(), HasSubstr("node-wide"));
}

TEST(SysctlPolicyTest, RefusesMalformedKeys) {
  for (const char* k : {"", "net..core", "net/../../etc/passwd", ".net.core", "net.core.",
                        "net.core.somaxconn value", "net.core.*"}) {
    EXPECT_FALSE(CheckSysctl(k).ok()) << k;
  }
}

TEST(SysctlPolicyTest, PathsAndNamespaces) {
  EXPECT_EQ(SysctlPath("net.core.somaxconn"), "/proc/sys/net/core/somaxconn");
  EXPECT_EQ(SysctlNamespaceOf("net.core.somaxconn"), SysctlNamespace::kNet);
  EXPECT_EQ(SysctlNamespaceOf("kernel.shmmax"), SysctlNamespace::kIpc);
}

}  // namespace
}  // namespace booster::agent
