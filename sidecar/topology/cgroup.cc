#include "sidecar/topology/cgroup.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/base/file_util.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

// v1 reports "no limit" as LONG_MAX rounded down to a page; anything this large is none.
constexpr uint64_t kUnlimitedMemory = uint64_t{1} << 62;

bool HasController(const std::vector<std::string>& list, absl::string_view c) {
  return std::find(list.begin(), list.end(), c) != list.end();
}

// The directory of cgroup `path` under mount `m`, or "" when the mount does not show it.
std::string JoinCgroupPath(const CgroupMount& m, const std::string& path) {
  // "/.." steps out of the reader's cgroup namespace: a sibling's cgroup, not under any
  // directory of this mount.
  if (absl::StrContains(path, "/..")) return "";
  std::string rel;
  if (m.root == "/") {
    rel = path;
  } else if (path.rfind(m.root, 0) == 0 &&
             (path.size() == m.root.size() || path[m.root.size()] == '/')) {
    rel = path.substr(m.root.size());
  } else if (path == "/") {
    // A process at the root of a cgroup namespace whose mount shows its own cgroup.
    rel = "";
  } else {
    // A container's mount shows only its own cgroup: a process of another container (the
    // app, seen from the agent's container) is in a sibling this mount does not show.
    // Its own mount point would be the reader's cgroup, whose CPU and quota are not the
    // target's.
    return "";
  }
  if (rel == "/") rel = "";
  return m.mount_point + rel;
}

// Unescapes mountinfo's octal escapes (\040 for a space).
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 4, v, 8);
      if (ec == std::errc() && p == s.data() + i + 4) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<CgroupEntry>> ParseProcCgroup(absl::string_view text) {
  std::vector<CgroupEntry> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    CgroupEntry e;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &e.hierarchy)) {
      return absl::InvalidArgumentError(absl::StrCat("bad /proc/<pid>/cgroup line: ", line));
    }
    for (absl::string_view c : absl::StrSplit(f[1], ',', absl::SkipEmpty())) {
      e.controllers.emplace_back(c);
    }
    e.path = std::string(absl::StripTrailingAsciiWhitespace(f[2]));
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::vector<CgroupMount>> ParseCgroupMounts(absl::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 10 || dash == f.end() || f.end() - dash < 4) {
      return absl::InvalidArgumentError(absl::StrCat("bad mountinfo line: ", line));
    }
    absl::string_view fstype = *(dash + 1);
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    CgroupMount m;
    m.root = Unescape(f[3]);
    m.mount_point = Unescape(f[4]);
    m.v2 = fstype == "cgroup2";
    if (!m.v2) {
      for (absl::string_view o : absl::StrSplit(*(dash + 3), ',')) {
        if (o == "rw" || o == "ro" || absl::StartsWith(o, "name=") ||
            absl::StartsWith(o, "release_agent") || o == "noprefix" || o == "clone_children") {
          continue;
        }
        m.controllers.emplace_back(o);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

CgroupPaths ResolveCgroupPaths(const std::vector<CgroupMount>& mounts,
                               const std::vector<CgroupEntry>& entries) {
  CgroupPaths out;
  const CgroupMount* v2_mount = nullptr;
  for (const CgroupMount& m : mounts) {
    if (m.v2 && v2_mount == nullptr) v2_mount = &m;
  }
  const CgroupEntry* v2_entry = nullptr;
  for (const CgroupEntry& e : entries) {
    if (e.hierarchy == 0 && e.controllers.empty()) v2_entry = &e;
  }
  auto resolve = [&](absl::string_view controller, bool* on_v1) -> std::string {
    for (const CgroupEntry& e : entries) {
      if (!HasController(e.controllers, controller)) continue;
      for (const CgroupMount& m : mounts) {
        if (!m.v2 && HasController(m.controllers, controller)) {
          *on_v1 = true;
          if (controller == "cpu") out.cpu_is_root = e.path == "/";
          return JoinCgroupPath(m, e.path);
        }
      }
    }
    *on_v1 = false;
    if (controller == "cpu" && v2_entry != nullptr) out.cpu_is_root = v2_entry->path == "/";
    if (v2_mount != nullptr && v2_entry != nullptr)
      return JoinCgroupPath(*v2_mount, v2_entry->path);
    return "";
  };
  bool cpu_v1 = false;
  bool unused = false;
  out.cpu = resolve("cpu", &cpu_v1);
  out.cpuacct = resolve("cpuacct", &unused);
  out.cpuset = resolve("cpuset", &unused);
  out.memory = resolve("memory", &unused);
  if (out.cpu.empty()) {
    out.version = 0;
  } else {
    out.version = cpu_v1 ? 1 : 2;
  }
  return out;
}

absl::StatusOr<std::optional<double>> ParseCfsQuota(absl::string_view quota_us,
                                                    absl::string_view period_us) {
  int64_t q = 0;
  int64_t p = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(quota_us), &q) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(period_us), &p)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad cfs quota/period: \"", quota_us, "\" / \"", period_us, "\""));
  }
  if (q < 0) return std::optional<double>();
  if (p <= 0) return absl::InvalidArgumentError("cfs period must be positive");
  return std::optional<double>(static_cast<double>(q) / static_cast<double>(p));
}

absl::StatusOr<std::optional<double>> ParseCpuMax(absl::string_view text, int64_t* quota_us,
                                                  int64_t* period_us) {
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  int64_t p = 100000;
  if (f.empty() || f.size() > 2 || (f.size() == 2 && !absl::SimpleAtoi(f[1], &p)) || p <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad cpu.max: \"", text, "\""));
  }
  *period_us = p;
  if (f[0] == "max") {
    *quota_us = -1;
    return std::optional<double>();
  }
  int64_t q = 0;
  if (!absl::SimpleAtoi(f[0], &q) || q <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad cpu.max: \"", text, "\""));
  }
  *quota_us = q;
  return std::optional<double>(static_cast<double>(q) / static_cast<double>(p));
}

absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimit(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "max") return std::optional<uint64_t>();
  uint64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("bad memory limit: \"", text, "\""));
  }
  if (v >= kUnlimitedMemory) return std::optional<uint64_t>();
  return std::optional<uint64_t>(v);
}

absl::StatusOr<CpuStat> ParseCpuStat(absl::string_view text) {
  CpuStat s;
  bool any = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t v = 0;
    if (f.size() != 2 || !absl::SimpleAtoi(f[1], &v)) {
      return absl::InvalidArgumentError(absl::StrCat("bad cpu.stat line: ", line));
    }
    any = true;
    if (f[0] == "nr_periods") {
      s.nr_periods = v;
    } else if (f[0] == "nr_throttled") {
      s.nr_throttled = v;
    } else if (f[0] == "throttled_time") {  // v1: nanoseconds
      s.throttled_ns = v;
    } else if (f[0] == "throttled_usec") {  // v2
      s.throttled_ns = v * 1000;
    } else if (f[0] == "usage_usec") {
      s.usage_ns = v * 1000;
    }
  }
  if (!any) return absl::InvalidArgumentError("empty cpu.stat");
  return s;
}

absl::StatusOr<CgroupPaths> FindCgroups(const std::string& proc_root, int pid) {
  std::string base = absl::StrCat(proc_root, "/", pid);
  absl::StatusOr<std::string> cg = ReadFile(base + "/cgroup");
  if (!cg.ok()) return cg.status();
  // Mounts as this agent sees them: the files are read through our own mount namespace.
  absl::StatusOr<std::string> mi = ReadFile(proc_root + "/self/mountinfo");
  if (!mi.ok()) return mi.status();
  absl::StatusOr<std::vector<CgroupEntry>> entries = ParseProcCgroup(*cg);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<std::vector<CgroupMount>> mounts = ParseCgroupMounts(*mi);
  if (!mounts.ok()) return mounts.status();
  CgroupPaths paths = ResolveCgroupPaths(*mounts, *entries);
  if (paths.version == 0) {
    return absl::NotFoundError(absl::StrCat("no cpu cgroup found for pid ", pid));
  }
  return paths;
}

absl::StatusOr<Limits> ReadLimits(const CgroupPaths& paths) {
  Limits l;
  l.cgroup_version = paths.version;
  if (paths.version == 1) {
    absl::StatusOr<std::string> q = ReadFile(paths.cpu + "/cpu.cfs_quota_us");
    absl::StatusOr<std::string> p = ReadFile(paths.cpu + "/cpu.cfs_period_us");
    if (!q.ok()) return q.status();
    if (!p.ok()) return p.status();
    absl::StatusOr<std::optional<double>> cores = ParseCfsQuota(*q, *p);
    if (!cores.ok()) return cores.status();
    l.cpu_quota_cores = *cores;
    absl::SimpleAtoi(absl::StripAsciiWhitespace(*q), &l.cfs_quota_us);
    absl::SimpleAtoi(absl::StripAsciiWhitespace(*p), &l.cfs_period_us);
  } else {
    absl::StatusOr<std::string> m = ReadFile(paths.cpu + "/cpu.max");
    if (m.ok()) {  // absent at the root of the hierarchy
      absl::StatusOr<std::optional<double>> cores =
          ParseCpuMax(*m, &l.cfs_quota_us, &l.cfs_period_us);
      if (!cores.ok()) return cores.status();
      l.cpu_quota_cores = *cores;
    }
  }
  if (!paths.memory.empty()) {
    absl::StatusOr<std::string> m = ReadFile(paths.memory + "/memory.limit_in_bytes");
    if (!m.ok()) m = ReadFile(paths.memory + "/memory.max");
    if (m.ok()) {
      absl::StatusOr<std::optional<uint64_t>> lim = ParseMemoryLimit(*m);
      if (!lim.ok()) return lim.status();
      l.memory_limit_bytes = *lim;
    }
  }
  if (!paths.cpuset.empty()) {
    for (const char* name : {"/cpuset.effective_cpus", "/cpuset.cpus.effective", "/cpuset.cpus"}) {
      absl::StatusOr<std::string> c = ReadFile(paths.cpuset + name);
      if (!c.ok()) continue;
      absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*c);
      if (!cpus.ok()) return cpus.status();
      l.cpus = *cpus;
      break;
    }
    for (const char* name : {"/cpuset.effective_mems", "/cpuset.mems.effective", "/cpuset.mems"}) {
      absl::StatusOr<std::string> c = ReadFile(paths.cpuset + name);
      if (!c.ok()) continue;
      absl::StatusOr<std::vector<int>> mems = ParseCpuList(*c);
      if (!mems.ok()) return mems.status();
      l.mems = *mems;
      break;
    }
  }
  return l;
}

absl::StatusOr<Limits> LimitsOfProcess(const std::string& proc_root, int pid) {
  absl::StatusOr<CgroupPaths> paths = FindCgroups(proc_root, pid);
  if (!paths.ok()) return paths.status();
  absl::StatusOr<Limits> limits = ReadLimits(*paths);
  if (!limits.ok()) return limits.status();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) == 0) {
    std::vector<int> aff;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) aff.push_back(c);
    }
    limits->cpus = limits->cpus.empty() ? aff : IntersectSorted(limits->cpus, aff);
  }
  return limits;
}

}  // namespace booster::agent
