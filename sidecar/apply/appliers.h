// Appliers: the only code that changes anything outside the agent. Each one journals
// the value it replaces (durably) before changing it, so RevertAll — on a rollback
// directive, on SIGTERM, or at start-up after an agent died mid-change — restores the
// pod exactly. What they change:
//   - CPU affinity of every thread of the target processes (sched_setaffinity);
//   - NUMA placement of their memory (migrate_pages via libnuma);
//   - namespaced sysctls, in the agent's network / IPC namespace (the pod's);
//   - the libbooster.so control page.
//
//   Appliers a(&journal);
//   a.SetAffinity(pids, plan.cpus);
//   a.SetSysctl("net.core.somaxconn", "4096");
//   ...
//   a.RevertAll(&log);
#ifndef BOOSTER_SIDECAR_APPLY_APPLIERS_H_
#define BOOSTER_SIDECAR_APPLY_APPLIERS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sidecar/apply/control_file.h"
#include "sidecar/apply/journal.h"

namespace booster::agent {

// One target process placed thread by thread, kept by the agent between rescans so that
// only threads it has not seen yet are looked at again.
struct ThreadPlacementState {
  int pid = 0;
  std::set<int> seen;         // threads placed, or found placed as planned
  std::map<int, int> pinned;  // CPU -> threads of this process pinned there (pin mode)
  bool journaled_process = false;
};

struct PlaceThreadsResult {
  int changed = 0;  // threads whose affinity was set
  int already = 0;  // threads found placed as planned (by libbooster.so, or inherited)
  // Set when the kernel refused to change this process's threads (EPERM: another user
  // and no CAP_SYS_NICE); nothing of the process was changed or journaled.
  absl::Status denied;
};

class Appliers {
 public:
  // `journal` is not owned and outlives this object.
  explicit Appliers(Journal* journal, std::string proc_root = "/proc")
      : journal_(journal), proc_root_(std::move(proc_root)) {}

  // Pins every thread of `pids` (and threads they start while this runs) to `cpus`.
  absl::Status SetAffinity(const std::vector<int>& pids, const std::vector<int>& cpus);
  // Places every thread of state->pid not seen before: with `pin`, on the CPU of
  // `cpu_order` that holds the fewest of the process's threads (ties: the earlier in the
  // order); otherwise confined to all of `cpu_order`. A thread already placed that way is
  // left alone. Threads started meanwhile are picked up (up to 10 passes). Errors only
  // when the journal cannot be written; a refusal is PlaceThreadsResult::denied.
  absl::StatusOr<PlaceThreadsResult> PlaceThreads(const std::vector<int>& cpu_order, bool pin,
                                                  ThreadPlacementState* state);
  // Moves the pages of `pids` that sit on other allowed nodes onto `nodes`.
  absl::Status MigrateMemory(const std::vector<int>& pids, const std::vector<int>& nodes);
  // Refuses keys outside the namespaced allowlist (sysctl_policy.h).
  absl::Status SetSysctl(const std::string& key, const std::string& value);
  absl::Status PublishControl(const std::string& path, const booster_control& page);

  // Reverts every journaled change, newest first, then clears the journal. A change
  // whose target is gone (the process exited) counts as reverted. On error the journal
  // is kept so a later call can retry. `log` (optional) gets one line per action.
  absl::Status RevertAll(std::vector<std::string>* log);

 private:
  absl::Status RevertOne(const JournalEntry& e, const std::vector<JournalEntry>& all,
                         std::vector<std::string>* log);
  Journal* journal_;
  std::string proc_root_;
};

// Reads the current value of a sysctl (trailing newline removed).
absl::StatusOr<std::string> ReadSysctl(const std::string& key);
// The inode of this process's namespace of that kind ("net", "ipc").
absl::StatusOr<uint64_t> NamespaceInode(const std::string& kind);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_APPLY_APPLIERS_H_
