#include "sidecar/apply/sysctl_policy.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace booster::agent {
namespace {

// net.* keys that exist only in the initial network namespace (global to the node).
constexpr absl::string_view kGlobalNet[] = {"net.core.rmem_max",
                                            "net.core.wmem_max",
                                            "net.core.rmem_default",
                                            "net.core.wmem_default",
                                            "net.core.netdev_max_backlog",
                                            "net.core.netdev_budget",
                                            "net.core.netdev_budget_usecs",
                                            "net.core.dev_weight",
                                            "net.core.optmem_max",
                                            "net.core.busy_poll",
                                            "net.core.busy_read",
                                            "net.core.default_qdisc",
                                            "net.core.bpf_jit_enable",
                                            "net.core.bpf_jit_harden",
                                            "net.core.bpf_jit_kallsyms",
                                            "net.core.bpf_jit_limit",
                                            "net.core.flow_limit_cpu_bitmap",
                                            "net.core.rps_sock_flow_entries",
                                            "net.core.message_cost",
                                            "net.core.message_burst",
                                            "net.core.warnings",
                                            "net.ipv4.tcp_mem",
                                            "net.ipv4.udp_mem",
                                            "net.ipv4.route.max_size",
                                            "net.ipv4.neigh.default.gc_thresh1",
                                            "net.ipv4.neigh.default.gc_thresh2",
                                            "net.ipv4.neigh.default.gc_thresh3",
                                            "net.netfilter.nf_conntrack_max",
                                            "net.nf_conntrack_max",
                                            "net.unix.max_dgram_qlen_global"};

constexpr absl::string_view kRule =
    "only network-namespace sysctls (net.*, except the node-wide ones) and IPC-namespace "
    "sysctls (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*) may be set";

}  // namespace

absl::Status CheckSysctl(absl::string_view key) {
  bool well_formed = !key.empty() && key.front() != '.' && key.back() != '.' &&
                     !absl::StrContains(key, "..") &&
                     std::all_of(key.begin(), key.end(), [](char c) {
                       return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
                     });
  if (!well_formed) {
    return absl::InvalidArgumentError(
        absl::StrCat("sysctl \"", key, "\" is not a sysctl name (letters, digits, '.', '_', '-')"));
  }
  if (absl::StartsWith(key, "net.")) {
    for (absl::string_view g : kGlobalNet) {
      if (key == g) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sysctl ", key, " is node-wide (not per network namespace) and is refused; ", kRule));
      }
    }
    return absl::OkStatus();
  }
  if (absl::StartsWith(key, "kernel.shm") || absl::StartsWith(key, "kernel.msg") ||
      key == "kernel.sem" || absl::StartsWith(key, "fs.mqueue.")) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "sysctl ", key, " is not namespaced: writing it would change the whole node; ", kRule));
}

SysctlNamespace SysctlNamespaceOf(absl::string_view key) {
  return absl::StartsWith(key, "net.") ? SysctlNamespace::kNet : SysctlNamespace::kIpc;
}

std::string SysctlPath(absl::string_view key) {
  return absl::StrCat("/proc/sys/", absl::StrReplaceAll(key, {{".", "/"}}));
}

}  // namespace booster::agent
