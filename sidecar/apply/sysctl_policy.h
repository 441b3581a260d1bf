// Which sysctls the agent may write: only those the kernel keeps per network or IPC
// namespace, so a write changes the pod and never the node. Pure.
//
//   absl::Status s = CheckSysctl("vm.swappiness");
//   // kInvalidArgument: "sysctl vm.swappiness is not namespaced: ..."
#ifndef BOOSTER_SIDECAR_APPLY_SYSCTL_POLICY_H_
#define BOOSTER_SIDECAR_APPLY_SYSCTL_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

enum class SysctlNamespace { kNet, kIpc };

// OK when `key` (dotted, e.g. "net.core.somaxconn") may be written; kInvalidArgument
// with a message naming the key and the rule otherwise.
absl::Status CheckSysctl(absl::string_view key);
SysctlNamespace SysctlNamespaceOf(absl::string_view key);
// "/proc/sys/net/core/somaxconn" for "net.core.somaxconn".
std::string SysctlPath(absl::string_view key);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_APPLY_SYSCTL_POLICY_H_
