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
#ifndef BOOSTER_SIDECAR_APPLIERS_H_
#define BOOSTER_SIDECAR_APPLIERS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sidecar/control_file.h"
#include "sidecar/journal.h"

namespace booster::agent {

class Appliers {
 public:
  // `journal` is not owned and outlives this object.
  explicit Appliers(Journal* journal, std::string proc_root = "/proc")
      : journal_(journal), proc_root_(std::move(proc_root)) {}

  // Pins every thread of `pids` (and threads they start while this runs) to `cpus`.
  absl::Status SetAffinity(const std::vector<int>& pids, const std::vector<int>& cpus);
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

#endif  // BOOSTER_SIDECAR_APPLIERS_H_
