// Finding a process's cgroups and reading the limits the planner needs: CPU quota and
// period (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max), memory limit (v1
// memory.limit_in_bytes, v2 memory.max), cpuset CPUs and memory nodes, and the CPU
// statistics the samplers read (cpu.stat, cpuacct.usage). Parsers are pure and tested on
// files copied from real machines (testdata/); the readers are thin.
//
//   absl::StatusOr<CgroupPaths> paths = FindCgroups("/proc", pid);
//   absl::StatusOr<Limits> limits = ReadLimits(*paths);
#ifndef BOOSTER_SIDECAR_TOPOLOGY_CGROUP_H_
#define BOOSTER_SIDECAR_TOPOLOGY_CGROUP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

// What a container may use. Empty optionals / lists mean "no limit".
struct Limits {
  std::optional<double> cpu_quota_cores;  // quota / period
  int64_t cfs_quota_us = -1;              // -1: no quota
  int64_t cfs_period_us = 0;
  std::optional<uint64_t> memory_limit_bytes;
  std::vector<int> cpus;   // cpuset CPUs intersected with the process's affinity
  std::vector<int> mems;   // cpuset memory nodes
  int cgroup_version = 0;  // 1, 2, or 0 when unknown (offline planning)
};

// One line of /proc/<pid>/cgroup.
struct CgroupEntry {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for the v2 line "0::/path"
  std::string path;
};

// A cgroup filesystem from /proc/<pid>/mountinfo.
struct CgroupMount {
  std::string mount_point;
  std::string root;  // the cgroup path mounted there ("/" on the host)
  bool v2 = false;
  std::vector<std::string> controllers;  // v1 only, from the super options
};

// Directories of the cgroups a process is in, per controller; empty when not found.
struct CgroupPaths {
  int version = 0;      // 2 when cpu is on the unified hierarchy, else 1
  std::string cpu;      // v1 cpu (quota, cpu.stat) or the v2 directory
  std::string cpuacct;  // v1 cpuacct (usage); same as cpu on v2
  std::string cpuset;
  std::string memory;
  // The cpu cgroup is the root of its hierarchy as the reader sees it: on the host
  // (initial cgroup namespace) its counters are the whole machine's, not a container's.
  bool cpu_is_root = false;
};

struct CpuStat {
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_ns = 0;
  std::optional<uint64_t> usage_ns;  // v2 usage_usec; v1 reads cpuacct.usage instead
};

absl::StatusOr<std::vector<CgroupEntry>> ParseProcCgroup(absl::string_view text);
absl::StatusOr<std::vector<CgroupMount>> ParseCgroupMounts(absl::string_view mountinfo);
// Joins mounts and entries: per controller the v1 hierarchy that has it, else v2.
CgroupPaths ResolveCgroupPaths(const std::vector<CgroupMount>& mounts,
                               const std::vector<CgroupEntry>& entries);

// v1: quota "-1" means none. Returns cores = quota / period.
absl::StatusOr<std::optional<double>> ParseCfsQuota(absl::string_view quota_us,
                                                    absl::string_view period_us);
// v2 cpu.max: "max 100000" or "150000 100000". Also returns quota and period.
absl::StatusOr<std::optional<double>> ParseCpuMax(absl::string_view text, int64_t* quota_us,
                                                  int64_t* period_us);
// v1 memory.limit_in_bytes (a page-rounded LONG_MAX means none) or v2 memory.max ("max").
absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimit(absl::string_view text);
// v1 or v2 cpu.stat.
absl::StatusOr<CpuStat> ParseCpuStat(absl::string_view text);

// Thin readers.
absl::StatusOr<CgroupPaths> FindCgroups(const std::string& proc_root, int pid);
absl::StatusOr<Limits> ReadLimits(const CgroupPaths& paths);

// The limits of a live process: its cgroups' limits, with the CPUs narrowed to the
// process's own affinity (sched_getaffinity) where that is readable.
absl::StatusOr<Limits> LimitsOfProcess(const std::string& proc_root, int pid);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_TOPOLOGY_CGROUP_H_
