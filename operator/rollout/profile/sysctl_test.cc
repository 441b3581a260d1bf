// The sysctl allowlist (sysctl.h).
#include "operator/rollout/profile/sysctl.h"

#include <string>

#include "gtest/gtest.h"

namespace booster::rollout {
namespace {

TEST(SysctlTest, AllowlistHoldsOnlyNamespacedKeys) {
  for (const std::string& key : KnownSysctls()) {
    EXPECT_TRUE(key.rfind("net.", 0) == 0 || key.rfind("kernel.shm", 0) == 0 ||
                key.rfind("kernel.msg", 0) == 0 || key.rfind("fs.mqueue.", 0) == 0)
        << key;
    // Host-wide net.core keys are not namespaced; somaxconn is the exception.
    if (key.rfind("net.core.", 0) == 0) {
      EXPECT_EQ(key, "net.core.somaxconn");
    }
  }
  EXPECT_FALSE(IsKnownSysctl("vm.swappiness"));
  EXPECT_FALSE(IsKnownSysctl("kernel.pid_max"));
  EXPECT_TRUE(IsKnownSysctl("net.ipv4.tcp_rmem"));
  EXPECT_EQ(CheckSysctlValue("net.ipv4.tcp_rmem", "4096 131072 6291456"), "");
  EXPECT_NE(CheckSysctlValue("net.ipv4.tcp_rmem", "4096 131072"), "");
  EXPECT_NE(CheckSysctlValue("net.ipv4.tcp_rmem", "9 8 7"), "");
}

}  // namespace
}  // namespace booster::rollout
