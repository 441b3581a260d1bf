#include "sidecar/sample/sampler.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/proc_stats.h"

namespace booster::agent {
namespace {

std::vector<int> NumericEntries(const std::string& dir) {
  std::vector<int> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    int n = 0;
    if (absl::SimpleAtoi(e->d_name, &n)) out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t Diff(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

}  // namespace

std::string ContainerNameFromMountinfo(absl::string_view mountinfo, absl::string_view pod_uid) {
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    if (f.size() < 5) continue;
    absl::string_view root = f[3];  // the mounted directory within its filesystem
    size_t c = root.rfind("/containers/");
    if (c == absl::string_view::npos) continue;
    absl::string_view rest = root.substr(c + 12);  // <name>/<id>
    size_t slash = rest.find('/');
    if (slash == absl::string_view::npos || slash == 0) continue;
    absl::string_view id = rest.substr(slash + 1);
    if (id.empty() || absl::StrContains(id, '/')) continue;
    absl::string_view pod_dir = root.substr(0, c);  // .../pods/<uid>
    size_t p = pod_dir.rfind("/pods/");
    if (p == absl::string_view::npos) continue;
    absl::string_view uid = pod_dir.substr(p + 6);
    if (uid.empty() || absl::StrContains(uid, '/')) continue;
    if (!pod_uid.empty() && uid != pod_uid) continue;
    return std::string(rest.substr(0, slash));
  }
  return "";
}

absl::StatusOr<std::vector<int>> FindTargets(const std::string& proc_root,
                                             const TargetSelector& sel) {
  if (sel.pids.empty() && sel.cgroup_contains.empty() && sel.command_contains.empty() &&
      !sel.pod_peers) {
    return absl::InvalidArgumentError(
        "no target selector: give --target-pid, --target-cgroup or --target-command");
  }
  std::vector<int> candidates = sel.pids.empty() ? NumericEntries(proc_root) : sel.pids;
  std::vector<int> out;
  std::vector<std::string> names;  // container of out[i], when sel.containers is set
  int self = getpid();
  for (int pid : candidates) {
    if (pid == self) continue;
    std::string base = absl::StrCat(proc_root, "/", pid);
    absl::StatusOr<std::string> cmd = ReadFile(base + "/cmdline");
    if (!cmd.ok() || cmd->empty()) continue;  // gone, or a kernel thread
    if (sel.pod_peers) {
      absl::string_view argv0(cmd->c_str());  // up to the first NUL
      if (argv0 == "pause" || absl::EndsWith(argv0, "/pause")) continue;
      absl::StatusOr<std::string> cg = ReadFile(base + "/cgroup");
      if (!cg.ok() || (!sel.own_cgroup.empty() && *cg == sel.own_cgroup)) continue;
    }
    if (!sel.command_contains.empty()) {
      std::replace(cmd->begin(), cmd->end(), '\0', ' ');
      if (!absl::StrContains(*cmd, sel.command_contains)) continue;
    }
    if (!sel.cgroup_contains.empty()) {
      absl::StatusOr<std::string> cg = ReadFile(base + "/cgroup");
      if (!cg.ok() || !absl::StrContains(*cg, sel.cgroup_contains)) continue;
    }
    out.push_back(pid);
    if (!sel.containers.empty()) {
      absl::StatusOr<std::string> mounts = ReadFile(base + "/mountinfo");
      names.push_back(mounts.ok() ? ContainerNameFromMountinfo(*mounts, sel.pod_uid) : "");
    }
  }
  bool any_named = false;
  for (const std::string& n : names) any_named |= !n.empty();
  if (!any_named) return out;  // containers cannot be told apart here: keep them all
  std::vector<int> kept;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::find(sel.containers.begin(), sel.containers.end(), names[i]) != sel.containers.end()) {
      kept.push_back(out[i]);
    }
  }
  return kept;
}

ProcessSampler::ProcessSampler(std::string proc_root, CgroupPaths cgroup)
    : ProcessSampler(std::move(proc_root), std::vector<CgroupPaths>{std::move(cgroup)}) {}

ProcessSampler::ProcessSampler(std::string proc_root, std::vector<CgroupPaths> cgroups)
    : proc_root_(std::move(proc_root)), ticks_per_second_(std::max(1L, sysconf(_SC_CLK_TCK))) {
  SetCgroups(std::move(cgroups));
}

void ProcessSampler::SetCgroups(std::vector<CgroupPaths> cgroups) {
  cgroups_.clear();
  std::map<std::string, CgroupState> kept;
  for (CgroupPaths& c : cgroups) {
    if (c.cpu.empty() || kept.count(c.cpu) > 0) continue;
    auto it = cgroup_state_.find(c.cpu);
    kept[c.cpu] = it != cgroup_state_.end() ? it->second : CgroupState{};
    cgroups_.push_back(std::move(c));
  }
  cgroup_state_ = std::move(kept);
}

absl::StatusOr<TickDelta> ProcessSampler::Sample(const std::vector<int>& pids, absl::Time now) {
  TickDelta d;
  bool baseline = !last_time_.has_value();
  if (!baseline) d.seconds = absl::ToDoubleSeconds(now - *last_time_);
  last_time_ = now;

  std::map<std::pair<int, int>, TaskState> tasks;
  std::map<int, ProcState> procs;
  std::map<std::pair<int, uint64_t>, GoBuildInfo> go_build_infos;
  bool go_found = false;
  uint64_t tick_cpu_ns = 0;
  int readable = 0;
  for (int pid : pids) {
    std::string base = absl::StrCat(proc_root_, "/", pid);
    absl::StatusOr<std::string> stat_text = ReadFile(base + "/stat");
    if (!stat_text.ok()) continue;
    absl::StatusOr<ProcStat> st = ParseProcStat(*stat_text);
    if (!st.ok()) continue;
    ++readable;
    ProcState ps{st->starttime_ticks, st->utime_ticks + st->stime_ticks, st->minflt, st->majflt};
    auto prev = procs_.find(pid);
    if (prev != procs_.end() && prev->second.starttime == ps.starttime) {
      tick_cpu_ns += Diff(ps.cpu_ticks, prev->second.cpu_ticks) * 1'000'000'000ULL /
                     static_cast<uint64_t>(ticks_per_second_);
      d.minor_faults += Diff(ps.minflt, prev->second.minflt);
      d.major_faults += Diff(ps.majflt, prev->second.majflt);
    }
    procs[pid] = ps;
    // The executable is read once per process: its build info does not change while it runs.
    auto go_key = std::make_pair(pid, ps.starttime);
    auto known = go_build_infos_.find(go_key);
    GoBuildInfo& go = go_build_infos[go_key];
    go = known != go_build_infos_.end() ? known->second
                                        : ReadExecutableBuildInfo(base + "/exe", pid);
    int allowed_cpus = 0;  // of the main thread, read below with the other threads
    d.rss_bytes += static_cast<uint64_t>(std::max<int64_t>(0, st->rss_pages)) *
                   static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    ++d.processes;
    for (int tid : NumericEntries(base + "/task")) {
      std::string tbase = absl::StrCat(base, "/task/", tid);
      absl::StatusOr<std::string> ss = ReadFile(tbase + "/schedstat");
      absl::StatusOr<std::string> status = ReadFile(tbase + "/status");
      if (tid == pid && status.ok()) {
        // The main thread's affinity is the process's (/proc/<pid>/status shows it).
        absl::StatusOr<int> cpus = ParseAllowedCpuCount(*status);
        allowed_cpus = cpus.ok() ? *cpus : 0;
      }
      if (!ss.ok() || !status.ok()) continue;  // the thread just exited
      absl::StatusOr<Schedstat> sched = ParseSchedstat(*ss);
      absl::StatusOr<ProcStatus> pst = ParseProcStatus(*status);
      if (!sched.ok() || !pst.ok()) continue;
      ++d.threads;
      TaskState ts{sched->wait_ns, sched->timeslices, pst->voluntary_ctxt_switches,
                   pst->nonvoluntary_ctxt_switches};
      auto key = std::make_pair(pid, tid);
      auto tprev = tasks_.find(key);
      // Within a process already sampled, a thread not seen before was born since the
      // last sample and counts from zero; a process seen for the first time is baseline.
      bool same_proc = prev != procs_.end() && prev->second.starttime == ps.starttime;
      if (!baseline && same_proc) {
        TaskState before = tprev != tasks_.end() ? tprev->second : TaskState{};
        d.runq_wait_ns += Diff(ts.wait_ns, before.wait_ns);
        d.timeslices += Diff(ts.timeslices, before.timeslices);
        d.voluntary_cs += Diff(ts.vcs, before.vcs);
        d.involuntary_cs += Diff(ts.ivcs, before.ivcs);
      }
      tasks[key] = ts;
    }
    // The application's facts: the first Go program among the targets, else the first.
    if (!go_found && (!go.version.empty() || readable == 1)) {
      d.go_version = go.version;
      d.go_default_godebug = go.default_godebug;
      d.app_cpus = allowed_cpus;
      go_found = !go.version.empty();
    }
  }
  tasks_ = std::move(tasks);
  procs_ = std::move(procs);
  go_build_infos_ = std::move(go_build_infos);
  if (readable == 0 && !pids.empty()) {
    return absl::NotFoundError("none of the target processes could be read");
  }

  // Container CPU: the cgroups' own counters when every target cgroup has one (precise,
  // includes processes the selector missed), else the targets' utime + stime.
  d.cpu_ns = tick_cpu_ns;
  uint64_t cgroup_cpu_ns = 0;
  bool cgroup_cpu_complete = !cgroups_.empty();
  for (const CgroupPaths& cg : cgroups_) {
    CgroupState& st = cgroup_state_[cg.cpu];
    absl::StatusOr<std::string> text = ReadFile(cg.cpu + "/cpu.stat");
    absl::StatusOr<CpuStat> cs =
        text.ok() ? ParseCpuStat(*text) : absl::StatusOr<CpuStat>(text.status());
    if (!cs.ok()) {
      cgroup_cpu_complete = false;
      continue;
    }
    if (st.cpu_stat.has_value()) {
      d.nr_periods += Diff(cs->nr_periods, st.cpu_stat->nr_periods);
      d.nr_throttled += Diff(cs->nr_throttled, st.cpu_stat->nr_throttled);
      d.throttled_ns += Diff(cs->throttled_ns, st.cpu_stat->throttled_ns);
      d.cpu_stat_read = true;
    }
    st.cpu_stat = *cs;
    std::optional<uint64_t> usage = cs->usage_ns;
    if (!usage.has_value() && !cg.cpuacct.empty()) {
      absl::StatusOr<std::string> u = ReadFile(cg.cpuacct + "/cpuacct.usage");
      uint64_t v = 0;
      if (u.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*u), &v)) usage = v;
    }
    if (usage.has_value() && st.usage_ns.has_value()) {
      cgroup_cpu_ns += Diff(*usage, *st.usage_ns);
    } else {
      cgroup_cpu_complete = false;
    }
    st.usage_ns = usage;
  }
  if (cgroup_cpu_complete) d.cpu_ns = cgroup_cpu_ns;

  // The pod's network namespace, through the first target's /proc/<pid>/net.
  if (!procs_.empty()) {
    std::string net = absl::StrCat(proc_root_, "/", procs_.begin()->first, "/net/");
    std::map<std::string, int64_t> counters;
    for (const char* f : {"netstat", "snmp"}) {
      absl::StatusOr<std::string> text = ReadFile(net + f);
      if (!text.ok()) continue;
      absl::StatusOr<std::map<std::string, int64_t>> c = ParseNetCounters(*text);
      if (c.ok()) counters.insert(c->begin(), c->end());
    }
    if (!last_net_.empty() && !counters.empty()) {
      d.net_read = true;
      auto delta = [&](const std::string& k) -> int64_t {
        auto a = counters.find(k);
        auto b = last_net_.find(k);
        if (a == counters.end() || b == last_net_.end()) return 0;
        return std::max<int64_t>(0, a->second - b->second);
      };
      d.listen_overflows = delta("TcpExt.ListenOverflows");
      d.listen_drops = delta("TcpExt.ListenDrops");
      d.tcp_retrans_segs = delta("Tcp.RetransSegs");
      d.tcp_out_segs = delta("Tcp.OutSegs");
    }
    if (!counters.empty()) last_net_ = std::move(counters);
  }
  d.procs_read = readable > 0;
  if (baseline) {
    TickDelta zero;
    zero.rss_bytes = d.rss_bytes;
    zero.threads = d.threads;
    zero.processes = d.processes;
    zero.go_version = d.go_version;
    zero.go_default_godebug = d.go_default_godebug;
    zero.app_cpus = d.app_cpus;
    return zero;
  }
  return d;
}

GoBuildInfo ProcessSampler::ReadExecutableBuildInfo(const std::string& exe, int pid) {
  std::string error;
  std::optional<GoBuildInfo> info = ReadGoBuildInfo(exe, &error);
  if (!error.empty()) {
    notes_.push_back(
        absl::StrCat("the Go version of process ", pid, " is unknown (read once): ", error));
  }
  return info.value_or(GoBuildInfo{});
}

std::vector<std::string> ProcessSampler::TakeNotes() {
  std::vector<std::string> out;
  out.swap(notes_);
  return out;
}

void WindowAggregator::Add(const TickDelta& d) {
  ++ticks_;
  if (d.processes > 0) {
    ++rss_ticks_;
    go_version_ = d.go_version;
    go_default_godebug_ = d.go_default_godebug;
    app_cpus_ = d.app_cpus;
  }
  if (d.seconds > 0 && d.procs_read) {
    ++measured_ticks_;
    measured_seconds_ += d.seconds;
  }
  if (d.seconds > 0 && d.cpu_stat_read) ++cpu_stat_ticks_;
  if (d.seconds > 0 && d.net_read) {
    ++net_ticks_;
    net_seconds_ += d.seconds;
  }
  sum_.seconds += d.seconds;
  sum_.cpu_ns += d.cpu_ns;
  sum_.runq_wait_ns += d.runq_wait_ns;
  sum_.timeslices += d.timeslices;
  sum_.voluntary_cs += d.voluntary_cs;
  sum_.involuntary_cs += d.involuntary_cs;
  sum_.minor_faults += d.minor_faults;
  sum_.major_faults += d.major_faults;
  sum_.nr_periods += d.nr_periods;
  sum_.nr_throttled += d.nr_throttled;
  sum_.throttled_ns += d.throttled_ns;
  sum_.listen_overflows += d.listen_overflows;
  sum_.listen_drops += d.listen_drops;
  sum_.tcp_retrans_segs += d.tcp_retrans_segs;
  sum_.tcp_out_segs += d.tcp_out_segs;
  sum_.rss_bytes = d.rss_bytes;
  sum_.threads = d.threads;
  sum_.processes = d.processes;
  rss_max_ = std::max(rss_max_, d.rss_bytes);
}

WindowReport WindowAggregator::Close(absl::Time now) {
  WindowReport r;
  r.start = start_;
  r.end = now;
  r.ticks = ticks_;
  r.tick_errors = errors_;
  // Rates over the time the measured samples cover (the first tick of a run, and ticks
  // without any target, have none).
  r.seconds = sum_.seconds;
  r.measured_ticks = measured_ticks_;
  r.measured_seconds = measured_seconds_;
  r.cpu_seconds = static_cast<double>(sum_.cpu_ns) / 1e9;
  r.runq_wait_seconds = static_cast<double>(sum_.runq_wait_ns) / 1e9;
  r.cpu_stat_ticks = cpu_stat_ticks_;
  r.net_ticks = net_ticks_;
  r.net_seconds = net_seconds_;
  double s = measured_seconds_;
  if (s > 0) {
    r.cpu_cores = static_cast<double>(sum_.cpu_ns) / 1e9 / s;
    r.runq_delay_per_second = static_cast<double>(sum_.runq_wait_ns) / 1e9 / s;
    r.voluntary_cs_rate = static_cast<double>(sum_.voluntary_cs) / s;
    r.involuntary_cs_rate = static_cast<double>(sum_.involuntary_cs) / s;
    r.minor_fault_rate = static_cast<double>(sum_.minor_faults) / s;
    r.major_fault_rate = static_cast<double>(sum_.major_faults) / s;
  }
  if (sum_.timeslices > 0) {
    r.runq_delay_avg_us =
        static_cast<double>(sum_.runq_wait_ns) / 1e3 / static_cast<double>(sum_.timeslices);
  }
  r.nr_periods = sum_.nr_periods;
  r.nr_throttled = sum_.nr_throttled;
  r.throttled_ratio = sum_.nr_periods > 0 ? static_cast<double>(sum_.nr_throttled) /
                                                static_cast<double>(sum_.nr_periods)
                                          : 0;
  r.throttled_seconds = static_cast<double>(sum_.throttled_ns) / 1e9;
  r.rss_max_bytes = rss_max_;
  r.rss_last_bytes = sum_.rss_bytes;
  r.rss_ticks = rss_ticks_;
  r.go_version = go_version_;
  r.go_default_godebug = go_default_godebug_;
  r.app_cpus = app_cpus_;
  r.threads = sum_.threads;
  r.processes = sum_.processes;
  r.listen_overflows = sum_.listen_overflows;
  r.listen_drops = sum_.listen_drops;
  r.tcp_retrans_segs = sum_.tcp_retrans_segs;
  r.tcp_out_segs = sum_.tcp_out_segs;
  r.tcp_retrans_ratio = sum_.tcp_out_segs > 0 ? static_cast<double>(sum_.tcp_retrans_segs) /
                                                    static_cast<double>(sum_.tcp_out_segs)
                                              : 0;
  start_ = now;
  sum_ = TickDelta{};
  rss_max_ = 0;
  rss_ticks_ = 0;
  go_version_.clear();
  go_default_godebug_.clear();
  app_cpus_ = 0;
  ticks_ = 0;
  errors_ = 0;
  measured_ticks_ = 0;
  measured_seconds_ = 0;
  cpu_stat_ticks_ = 0;
  net_ticks_ = 0;
  net_seconds_ = 0;
  return r;
}

}  // namespace booster::agent
