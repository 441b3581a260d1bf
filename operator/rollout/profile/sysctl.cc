// The sysctl allowlist and its value checks (sysctl.h).
#include "operator/rollout/profile/sysctl.h"

#include <cstdint>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace booster::rollout {
namespace {

using ValueCheck = std::function<std::string(absl::string_view)>;

std::vector<int64_t> Ints(absl::string_view value, bool* ok) {
  std::vector<int64_t> out;
  *ok = true;
  for (absl::string_view part : absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v)) {
      *ok = false;
      return {};
    }
    out.push_back(v);
  }
  return out;
}

ValueCheck IntRange(int64_t min, int64_t max) {
  return [min, max](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 1) return absl::StrCat("must be one integer from ", min, " to ", max);
    if (v[0] < min || v[0] > max) return absl::StrCat("must be from ", min, " to ", max);
    return "";
  };
}

// "low high", low <= high, both within [min, max].
ValueCheck Pair(int64_t min, int64_t max) {
  return [min, max](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 2 || v[0] < min || v[1] > max || v[0] > v[1]) {
      return absl::StrCat("must be two integers \"low high\" with ", min,
                          " <= low <= high <= ", max);
    }
    return "";
  };
}

// "min default max" buffer sizes (tcp_rmem/tcp_wmem).
ValueCheck Triple() {
  return [](absl::string_view value) -> std::string {
    bool ok;
    std::vector<int64_t> v = Ints(value, &ok);
    if (!ok || v.size() != 3 || v[0] < 1 || v[0] > v[1] || v[1] > v[2] || v[2] > (1LL << 31)) {
      return "must be three byte counts \"min default max\" with 1 <= min <= default <= max "
             "<= 2147483648";
    }
    return "";
  };
}

ValueCheck OneOf(std::vector<std::string> allowed) {
  return [allowed](absl::string_view value) -> std::string {
    for (const std::string& a : allowed) {
      if (value == a) return "";
    }
    return absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "));
  };
}

struct SysctlRule {
  const char* key;
  ValueCheck check;
};

// Namespaced sysctls only (they live in the pod's own network/IPC namespace); anything
// host-wide is refused whatever the kubelet would allow.
const std::vector<SysctlRule>& SysctlRules() {
  static const auto* rules = new std::vector<SysctlRule>{
      {"net.core.somaxconn", IntRange(1, 65535)},
      {"net.ipv4.tcp_max_syn_backlog", IntRange(128, 1048576)},
      {"net.ipv4.tcp_tw_reuse", IntRange(0, 2)},
      {"net.ipv4.ip_local_port_range", Pair(1024, 65535)},
      {"net.ipv4.ip_unprivileged_port_start", IntRange(0, 65536)},
      {"net.ipv4.ping_group_range", Pair(0, 2147483647)},
      {"net.ipv4.tcp_fin_timeout", IntRange(1, 600)},
      {"net.ipv4.tcp_keepalive_time", IntRange(1, 32767)},
      {"net.ipv4.tcp_keepalive_intvl", IntRange(1, 32767)},
      {"net.ipv4.tcp_keepalive_probes", IntRange(1, 127)},
      {"net.ipv4.tcp_syncookies", IntRange(0, 2)},
      {"net.ipv4.tcp_syn_retries", IntRange(1, 127)},
      {"net.ipv4.tcp_synack_retries", IntRange(1, 127)},
      {"net.ipv4.tcp_retries2", IntRange(3, 15)},
      {"net.ipv4.tcp_rmem", Triple()},
      {"net.ipv4.tcp_wmem", Triple()},
      {"net.ipv4.tcp_slow_start_after_idle", IntRange(0, 1)},
      {"net.ipv4.tcp_fastopen", IntRange(0, 3)},
      {"net.ipv4.tcp_notsent_lowat", IntRange(1, 2147483647)},
      {"net.ipv4.tcp_max_tw_buckets", IntRange(0, 2147483647)},
      {"net.ipv4.tcp_mtu_probing", IntRange(0, 2)},
      {"net.ipv4.tcp_no_metrics_save", IntRange(0, 1)},
      {"net.ipv4.tcp_timestamps", IntRange(0, 2)},
      {"net.ipv4.tcp_ecn", IntRange(0, 2)},
      {"net.ipv4.tcp_autocorking", IntRange(0, 1)},
      {"net.ipv4.tcp_congestion_control", OneOf({"cubic", "reno", "bbr"})},
      {"kernel.shm_rmid_forced", IntRange(0, 1)},
      {"kernel.shmmax", IntRange(1, INT64_MAX)},
      {"kernel.shmall", IntRange(1, INT64_MAX)},
      {"kernel.shmmni", IntRange(1, 32768)},
      {"kernel.msgmax", IntRange(1, 2147483647)},
      {"kernel.msgmnb", IntRange(1, 2147483647)},
      {"kernel.msgmni", IntRange(1, 32768)},
      {"fs.mqueue.msg_max", IntRange(1, 65536)},
      {"fs.mqueue.msgsize_max", IntRange(128, 16777216)},
      {"fs.mqueue.queues_max", IntRange(0, 2147483647)},
  };
  return *rules;
}

const SysctlRule* FindSysctl(absl::string_view key) {
  for (const SysctlRule& r : SysctlRules()) {
    if (key == r.key) return &r;
  }
  return nullptr;
}

}  // namespace

bool IsKnownSysctl(absl::string_view key) { return FindSysctl(key) != nullptr; }

std::string CheckSysctlValue(absl::string_view key, absl::string_view value) {
  const SysctlRule* r = FindSysctl(key);
  if (r == nullptr) return "is not a namespaced sysctl Booster can set";
  return r->check(value);
}

std::vector<std::string> KnownSysctls() {
  std::vector<std::string> out;
  for (const SysctlRule& r : SysctlRules()) out.emplace_back(r.key);
  return out;
}

}  // namespace booster::rollout
