#include "sidecar/apply/appliers.h"

#include <dirent.h>
#include <numa.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/crash_hook.h"
#include "sidecar/apply/sysctl_policy.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/proc_stats.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

// Start time of a task, identifying it across pid reuse; kNotFound when gone.
absl::StatusOr<uint64_t> StartTime(const std::string& proc_root, int pid, int tid) {
  std::string path = tid == 0 ? absl::StrCat(proc_root, "/", pid, "/stat")
                              : absl::StrCat(proc_root, "/", pid, "/task/", tid, "/stat");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ProcStat> st = ParseProcStat(*text);
  if (!st.ok()) return st.status();
  return st->starttime_ticks;
}

std::vector<int> Tasks(const std::string& proc_root, int pid) {
  std::vector<int> out;
  std::string dir = absl::StrCat(proc_root, "/", pid, "/task");
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      int tid = 0;
      if (absl::SimpleAtoi(e->d_name, &tid)) out.push_back(tid);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<int>> GetAffinity(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) {
    return ErrnoStatus(errno, absl::StrCat("sched_getaffinity ", tid));
  }
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

absl::Status SetTaskAffinity(int tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
    return ErrnoStatus(errno, absl::StrCat("sched_setaffinity ", tid, " to ", FormatCpuList(cpus)));
  }
  return absl::OkStatus();
}

bool ParseU64(const std::string& s, uint64_t* v) { return absl::SimpleAtoi(s, v); }
bool ParseInt(const std::string& s, int* v) { return absl::SimpleAtoi(s, v); }

}  // namespace

absl::StatusOr<std::string> ReadSysctl(const std::string& key) {
  absl::StatusOr<std::string> v = ReadFile(SysctlPath(key));
  if (!v.ok()) return v.status();
  return std::string(absl::StripTrailingAsciiWhitespace(*v));
}

absl::StatusOr<uint64_t> NamespaceInode(const std::string& kind) {
  struct stat st {};
  std::string path = "/proc/self/ns/" + kind;
  if (stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
  return static_cast<uint64_t>(st.st_ino);
}

absl::Status Appliers::SetAffinity(const std::vector<int>& pids, const std::vector<int>& cpus) {
  if (cpus.empty()) return absl::InvalidArgumentError("refusing an empty CPU set");
  std::set<std::pair<int, int>> done;
  for (int pid : pids) {
    absl::StatusOr<uint64_t> pstart = StartTime(proc_root_, pid, 0);
    if (!pstart.ok()) continue;  // exited
    absl::StatusOr<std::vector<int>> pmask = GetAffinity(pid);
    if (!pmask.ok()) continue;
    std::vector<JournalEntry> entries = {
        {"affinity-process", {absl::StrCat(pid), absl::StrCat(*pstart), FormatCpuList(*pmask)}}};
    // Threads started while we work inherit either mask; loop until none is new.
    for (int pass = 0; pass < 10; ++pass) {
      std::vector<std::pair<int, std::vector<int>>> todo;
      for (int tid : Tasks(proc_root_, pid)) {
        if (done.count({pid, tid}) != 0) continue;
        absl::StatusOr<uint64_t> tstart = StartTime(proc_root_, pid, tid);
        absl::StatusOr<std::vector<int>> mask = GetAffinity(tid);
        if (!tstart.ok() || !mask.ok()) continue;
        entries.push_back({"affinity",
                           {absl::StrCat(pid), absl::StrCat(*pstart), absl::StrCat(tid),
                            absl::StrCat(*tstart), FormatCpuList(*mask)}});
        todo.emplace_back(tid, *mask);
      }
      if (todo.empty()) break;
      if (absl::Status s = journal_->Append(entries); !s.ok()) return s;
      entries.clear();
      for (const auto& [tid, mask] : todo) {
        done.insert({pid, tid});
        absl::Status s = SetTaskAffinity(tid, cpus);
        if (!s.ok() && !absl::IsNotFound(s)) return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PlaceThreadsResult> Appliers::PlaceThreads(const std::vector<int>& cpu_order,
                                                          bool pin, ThreadPlacementState* state) {
  if (cpu_order.empty()) return absl::InvalidArgumentError("refusing an empty CPU set");
  PlaceThreadsResult result;
  const int pid = state->pid;
  absl::StatusOr<uint64_t> pstart = StartTime(proc_root_, pid, 0);
  if (!pstart.ok()) return result;  // exited
  std::vector<int> confine = cpu_order;
  std::sort(confine.begin(), confine.end());
  auto least_loaded = [&]() {
    int best = cpu_order.front();
    for (int cpu : cpu_order) {
      if (state->pinned[cpu] < state->pinned[best]) best = cpu;
    }
    return best;
  };
  bool probed = false;
  for (int pass = 0; pass < 10; ++pass) {
    std::vector<JournalEntry> entries;
    std::vector<std::pair<int, std::vector<int>>> todo;  // tid, new mask
    for (int tid : Tasks(proc_root_, pid)) {
      if (state->seen.count(tid) != 0) continue;
      absl::StatusOr<uint64_t> tstart = StartTime(proc_root_, pid, tid);
      absl::StatusOr<std::vector<int>> mask = GetAffinity(tid);
      if (!tstart.ok() || !mask.ok()) continue;  // gone
      std::vector<int> want = pin ? std::vector<int>{least_loaded()} : confine;
      if (pin) ++state->pinned[want.front()];
      state->seen.insert(tid);
      if (*mask == want) {
        ++result.already;
        continue;
      }
      if (!probed) {
        // Setting a thread's own mask again changes nothing, and tells whether the kernel
        // lets this agent change the process at all: a refusal leaves no journal entry
        // that could never be reverted.
        probed = true;
        if (absl::Status s = SetTaskAffinity(tid, *mask); !s.ok() && !absl::IsNotFound(s)) {
          result.denied = s;
          state->seen.clear();
          state->pinned.clear();
          return result;
        }
      }
      entries.push_back({"affinity",
                         {absl::StrCat(pid), absl::StrCat(*pstart), absl::StrCat(tid),
                          absl::StrCat(*tstart), FormatCpuList(*mask)}});
      todo.emplace_back(tid, std::move(want));
    }
    if (todo.empty()) break;
    if (!state->journaled_process) {
      absl::StatusOr<std::vector<int>> pmask = GetAffinity(pid);
      entries.insert(entries.begin(), {"affinity-process",
                                       {absl::StrCat(pid), absl::StrCat(*pstart),
                                        FormatCpuList(pmask.ok() ? *pmask : confine)}});
    }
    if (absl::Status s = journal_->Append(entries); !s.ok()) return s;
    state->journaled_process = true;
    for (const auto& [tid, want] : todo) {
      absl::Status s = SetTaskAffinity(tid, want);
      if (s.ok()) {
        ++result.changed;
      } else if (!absl::IsNotFound(s)) {
        return s;
      }
    }
  }
  return result;
}

absl::Status Appliers::MigrateMemory(const std::vector<int>& pids, const std::vector<int>& nodes) {
  if (numa_available() < 0) return absl::FailedPreconditionError("NUMA is not available");
  if (nodes.empty()) return absl::OkStatus();
  int max_node = numa_max_node();
  for (int pid : pids) {
    absl::StatusOr<uint64_t> pstart = StartTime(proc_root_, pid, 0);
    if (!pstart.ok()) continue;
    std::vector<int> from;
    for (int n = 0; n <= max_node; ++n) {
      if (numa_bitmask_isbitset(numa_all_nodes_ptr, n) &&
          !std::binary_search(nodes.begin(), nodes.end(), n)) {
        from.push_back(n);
      }
    }
    if (from.empty()) continue;  // all memory already on the chosen nodes
    if (absl::Status s = journal_->Append({{"numa",
                                            {absl::StrCat(pid), absl::StrCat(*pstart),
                                             FormatCpuList(from), FormatCpuList(nodes)}}});
        !s.ok()) {
      return s;
    }
    bitmask* f = numa_allocate_nodemask();
    bitmask* t = numa_allocate_nodemask();
    for (int n : from) numa_bitmask_setbit(f, n);
    for (int n : nodes) numa_bitmask_setbit(t, n);
    int rc = numa_migrate_pages(pid, f, t);
    int err = errno;
    numa_free_nodemask(f);
    numa_free_nodemask(t);
    if (rc < 0) return ErrnoStatus(err, absl::StrCat("migrate_pages of ", pid));
  }
  return absl::OkStatus();
}

absl::Status Appliers::SetSysctl(const std::string& key, const std::string& value) {
  if (absl::Status s = CheckSysctl(key); !s.ok()) return s;
  std::string kind = SysctlNamespaceOf(key) == SysctlNamespace::kNet ? "net" : "ipc";
  absl::StatusOr<uint64_t> ns = NamespaceInode(kind);
  if (!ns.ok()) return ns.status();
  absl::StatusOr<std::string> old = ReadSysctl(key);
  if (!old.ok()) {
    return absl::Status(old.status().code(),
                        absl::StrCat("sysctl ", key, " cannot be read in this ", kind,
                                     " namespace: ", old.status().message()));
  }
  if (absl::Status s = journal_->Append({{"sysctl", {kind, absl::StrCat(*ns), key, *old}}});
      !s.ok()) {
    return s;
  }
  return WriteExisting(SysctlPath(key), value);
}

absl::Status Appliers::PublishControl(const std::string& path, const booster_control& page) {
  bool created = false;
  absl::StatusOr<std::unique_ptr<ControlFile>> f = ControlFile::Open(path, &created);
  if (!f.ok()) return f.status();
  absl::StatusOr<booster_control> old = (*f)->Read();
  booster_control before;
  if (old.ok()) {
    before = *old;
  } else {
    booster_control_init(&before);
  }
  if (absl::Status s = journal_->Append({{"control", {path, ControlPageToHex(before)}}}); !s.ok()) {
    return s;
  }
  (*f)->Publish(page);
  return absl::OkStatus();
}

absl::Status Appliers::RevertOne(const JournalEntry& e, const std::vector<JournalEntry>& all,
                                 std::vector<std::string>* log) {
  auto note = [&](const std::string& s) {
    if (log != nullptr) log->push_back(s);
  };
  const std::vector<std::string>& f = e.fields;
  if (e.kind == "affinity" && f.size() == 5) {
    int pid = 0;
    int tid = 0;
    uint64_t pstart = 0;
    uint64_t tstart = 0;
    absl::StatusOr<std::vector<int>> mask = ParseCpuList(f[4]);
    if (!ParseInt(f[0], &pid) || !ParseU64(f[1], &pstart) || !ParseInt(f[2], &tid) ||
        !ParseU64(f[3], &tstart) || !mask.ok()) {
      return absl::DataLossError("bad affinity journal entry");
    }
    absl::StatusOr<uint64_t> now = StartTime(proc_root_, pid, tid);
    if (!now.ok() || *now != tstart) {
      note(absl::StrCat("affinity of thread ", tid, ": gone, nothing to restore"));
      return absl::OkStatus();
    }
    absl::Status s = SetTaskAffinity(tid, *mask);
    if (absl::IsNotFound(s)) return absl::OkStatus();
    if (s.ok()) note(absl::StrCat("affinity of thread ", tid, " restored to ", f[4]));
    return s;
  }
  if (e.kind == "affinity-process" && f.size() == 3) {
    // Threads started after the change were never journaled: they get the mask the
    // process had before.
    int pid = 0;
    uint64_t pstart = 0;
    absl::StatusOr<std::vector<int>> mask = ParseCpuList(f[2]);
    if (!ParseInt(f[0], &pid) || !ParseU64(f[1], &pstart) || !mask.ok()) {
      return absl::DataLossError("bad affinity-process journal entry");
    }
    absl::StatusOr<uint64_t> now = StartTime(proc_root_, pid, 0);
    if (!now.ok() || *now != pstart) return absl::OkStatus();
    std::set<int> journaled;
    for (const JournalEntry& o : all) {
      int opid = 0;
      int otid = 0;
      if (o.kind == "affinity" && o.fields.size() == 5 && ParseInt(o.fields[0], &opid) &&
          opid == pid && ParseInt(o.fields[2], &otid)) {
        journaled.insert(otid);
      }
    }
    int n = 0;
    for (int tid : Tasks(proc_root_, pid)) {
      if (journaled.count(tid) != 0) continue;
      absl::Status s = SetTaskAffinity(tid, *mask);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
      ++n;
    }
    if (n > 0) note(absl::StrCat("affinity of ", n, " newer threads of ", pid, " set to ", f[2]));
    return absl::OkStatus();
  }
  if (e.kind == "sysctl" && f.size() == 4) {
    absl::StatusOr<uint64_t> ns = NamespaceInode(f[0]);
    if (!ns.ok()) return ns.status();
    if (absl::StrCat(*ns) != f[1]) {
      return absl::FailedPreconditionError(
          absl::StrCat("sysctl ", f[2], " was changed in ", f[0], " namespace ", f[1],
                       " but this agent runs in ", *ns, "; not restoring it here"));
    }
    if (absl::Status s = CheckSysctl(f[2]); !s.ok()) return s;
    absl::Status s = WriteExisting(SysctlPath(f[2]), f[3]);
    if (s.ok()) note(absl::StrCat("sysctl ", f[2], " restored to ", f[3]));
    return s;
  }
  if (e.kind == "control" && f.size() == 2) {
    absl::StatusOr<booster_control> page = ControlPageFromHex(f[1]);
    if (!page.ok()) return page.status();
    absl::StatusOr<std::unique_ptr<ControlFile>> cf = ControlFile::Open(f[0]);
    if (!cf.ok()) return cf.status();
    (*cf)->Publish(*page);
    note(absl::StrCat("control page ", f[0], " restored (features ", page->features, ")"));
    return absl::OkStatus();
  }
  if (e.kind == "numa" && f.size() == 4) {
    // Page placement is not a setting: pages moved stay where they are, on nodes the
    // container was allowed to use. The CPU affinity revert lets the kernel place new
    // pages by its default local policy again.
    note(absl::StrCat("memory of ", f[0], " moved from nodes ", f[2], " to ", f[3],
                      " stays (page placement is not reverted)"));
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat("unknown journal entry ", EncodeJournalEntry(e)));
}

absl::Status Appliers::RevertAll(std::vector<std::string>* log) {
  const std::vector<JournalEntry> entries = journal_->entries();
  absl::Status first;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    absl::Status s = RevertOne(*it, entries, log);
    if (!s.ok()) {
      if (log != nullptr) log->push_back(absl::StrCat("revert failed: ", s.ToString()));
      if (first.ok()) first = s;
    }
    // Halfway: one change put back, the rest not, the journal still whole.
    if (it == entries.rbegin() && entries.size() > 1) {
      common::CrashHere("BOOSTER_TEST_CRASH_AT", "revert");
    }
  }
  if (!first.ok()) return first;
  return journal_->Clear();
}

}  // namespace booster::agent
