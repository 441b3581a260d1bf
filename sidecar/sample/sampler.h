// Samplers: once a second the agent reads the target processes' /proc files, their
// cgroup's cpu.stat and the pod's network counters, and turns them into increments
// (TickDelta) that a WindowAggregator sums into one report per window. Counters are
// differenced per thread, so threads that come and go neither lose nor double-count.
// Besides the counters, what the application is: the Go version and default GODEBUG of its
// executable (read once per process) and the CPUs it may run on.
//
//   ProcessSampler sampler("/proc", cgroup_paths);
//   WindowAggregator windows(absl::Seconds(10), clock.Now());
//   every second: windows.Add(*sampler.Sample(pids, clock.Now()));
//   if (windows.Due(clock.Now())) reporter.Report(windows.Close(clock.Now(), app));
#ifndef BOOSTER_SIDECAR_SAMPLE_SAMPLER_H_
#define BOOSTER_SIDECAR_SAMPLE_SAMPLER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/sample/app_metrics.h"
#include "sidecar/sample/go_build_info.h"
#include "sidecar/sample/prom_text.h"
#include "sidecar/topology/cgroup.h"

namespace booster::agent {

// Which processes of the pod the agent tunes and measures (the pod shares one process
// namespace). At least one criterion; all given ones must match.
struct TargetSelector {
  std::vector<int> pids;
  std::string cgroup_contains;   // a container id, or any part of /proc/<pid>/cgroup
  std::string command_contains;  // part of the command line
  // Every other process of the pod: what `run` watches when no selector is given. In a pod
  // with a shared PID namespace those are the app containers' processes; otherwise the agent
  // sees none and runs idle. Processes whose /proc/<pid>/cgroup equals `own_cgroup` (the
  // agent's own container) and the sandbox's pause process are left out.
  bool pod_peers = false;
  std::string own_cgroup;
  // Only processes of these containers (BOOSTER_CONTAINERS; empty: every container). A
  // process's container is read from /proc/<pid>/mountinfo: the kubelet bind-mounts each
  // container's termination-message file from .../pods/<pod uid>/containers/<name>/<id>.
  // When no candidate's container can be told, every candidate is kept.
  std::vector<std::string> containers;
  std::string pod_uid;  // narrows the mountinfo match when known
};

// The container name in a process's /proc/<pid>/mountinfo (see TargetSelector), or "" when
// the kubelet's per-container directory is not among its mounts. Pure.
std::string ContainerNameFromMountinfo(absl::string_view mountinfo, absl::string_view pod_uid);

absl::StatusOr<std::vector<int>> FindTargets(const std::string& proc_root,
                                             const TargetSelector& selector);

// Increments since the previous sample.
struct TickDelta {
  double seconds = 0;
  uint64_t cpu_ns = 0;        // cgroup usage when readable, else utime + stime
  uint64_t runq_wait_ns = 0;  // schedstat: time runnable but waiting for a CPU
  uint64_t timeslices = 0;
  uint64_t voluntary_cs = 0;
  uint64_t involuntary_cs = 0;
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  uint64_t throttled_ns = 0;
  int64_t listen_overflows = 0;
  int64_t listen_drops = 0;
  int64_t tcp_retrans_segs = 0;
  int64_t tcp_out_segs = 0;
  uint64_t rss_bytes = 0;  // gauge: the sum over targets now
  int threads = 0;         // gauge
  int processes = 0;       // gauge: targets read, the baseline sample included
  // The application (gauges): the Go version and default GODEBUG (go_build_info.h) of the
  // first target that is a Go program ("" when none is), and the CPUs that process may run
  // on (its main thread's Cpus_allowed_list; the first target's when none is a Go program;
  // 0 when unread).
  std::string go_version;
  std::string go_default_godebug;
  int app_cpus = 0;
  // What this delta covers (all false for the first, baseline sample).
  bool procs_read = false;     // at least one target was read: CPU and schedstat counted
  bool cpu_stat_read = false;  // a target cgroup's cpu.stat was differenced
  bool net_read = false;       // the pod's network counters were differenced
};

class ProcessSampler {
 public:
  // `cgroup` may be empty (no cgroup figures).
  ProcessSampler(std::string proc_root, CgroupPaths cgroup);
  // The targets' cgroups, one per container (summed). Cgroups without a cpu directory are
  // ignored.
  ProcessSampler(std::string proc_root, std::vector<CgroupPaths> cgroups);

  // Replaces the cgroups measured (containers came or went). Counters of a cgroup seen
  // before continue; a new one starts as baseline.
  void SetCgroups(std::vector<CgroupPaths> cgroups);

  // The first call establishes the baseline and returns zero increments (and the gauges).
  // Processes that vanished are skipped; an error only when nothing could be read.
  absl::StatusOr<TickDelta> Sample(const std::vector<int>& pids, absl::Time now);

  // What went wrong reading the application's facts since the last call, for the log: at
  // most one line per process (an executable that cannot be read, e.g. EACCES on
  // /proc/<pid>/exe, is tried once per process, and its Go version is "").
  std::vector<std::string> TakeNotes();

 private:
  struct TaskState {
    uint64_t wait_ns = 0, timeslices = 0, vcs = 0, ivcs = 0;
  };
  struct ProcState {
    uint64_t starttime = 0, cpu_ticks = 0, minflt = 0, majflt = 0;
  };
  struct CgroupState {
    std::optional<CpuStat> cpu_stat;
    std::optional<uint64_t> usage_ns;
  };
  // ReadGoBuildInfo of `exe`, empty when none; a read failure becomes a note.
  GoBuildInfo ReadExecutableBuildInfo(const std::string& exe, int pid);
  std::string proc_root_;
  std::vector<CgroupPaths> cgroups_;
  long ticks_per_second_;
  std::optional<absl::Time> last_time_;
  std::map<std::pair<int, int>, TaskState> tasks_;  // (pid, tid)
  std::map<int, ProcState> procs_;
  std::map<std::string, CgroupState> cgroup_state_;  // by cpu directory
  std::map<std::string, int64_t> last_net_;
  // The build info of each target process's executable (empty when not a Go program or not
  // readable), by (pid, starttime): read once per process, forgotten when it is gone.
  std::map<std::pair<int, uint64_t>, GoBuildInfo> go_build_infos_;
  std::vector<std::string> notes_;
};

// One window of figures, rates per second unless named otherwise.
struct WindowReport {
  absl::Time start;
  absl::Time end;
  double seconds = 0;
  int ticks = 0;
  int tick_errors = 0;
  double cpu_cores = 0;
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  double throttled_ratio = 0;  // throttled periods / periods
  double throttled_seconds = 0;
  double runq_delay_per_second = 0;  // seconds waited per second, summed over threads
  double runq_delay_avg_us = 0;      // mean wait per timeslice
  double voluntary_cs_rate = 0;
  double involuntary_cs_rate = 0;
  double minor_fault_rate = 0;
  double major_fault_rate = 0;
  uint64_t rss_max_bytes = 0;   // the targets' resident set summed, the highest of the ticks
  uint64_t rss_last_bytes = 0;  // ... at the last tick
  int rss_ticks = 0;            // ticks that read at least one target's resident set
  int threads = 0;
  int processes = 0;
  int64_t listen_overflows = 0;
  int64_t listen_drops = 0;
  int64_t tcp_retrans_segs = 0;
  int64_t tcp_out_segs = 0;
  double tcp_retrans_ratio = 0;
  // The raw sums behind the rates, and what they cover (window_metrics.h).
  int measured_ticks = 0;        // ticks with at least one target read
  double measured_seconds = 0;   // the time those ticks cover: the rates' denominator
  double cpu_seconds = 0;        // CPU core-seconds used in those ticks
  double runq_wait_seconds = 0;  // run-queue wait summed over threads
  int cpu_stat_ticks = 0;        // ticks with a cgroup cpu.stat differenced
  int net_ticks = 0;             // ticks with the pod's network counters differenced
  double net_seconds = 0;
  bool cpu_limited = false;               // set by the agent: a target cgroup has a CPU quota
  // The application, as of the window's last tick that read a target (TickDelta's).
  std::string go_version;          // "go1.26.0"; "" when no target is a Go program (or readable)
  std::string go_default_godebug;  // its DefaultGODEBUG; "" when none
  int app_cpus = 0;                // CPUs it may run on; 0 when unknown
  // Set by the agent from the application's scrapes (window_metrics.h):
  std::optional<PromWindow> app;              // the application's own metrics
  std::optional<RequestWindow> requests;      // its requests, latency and errors
  std::optional<GoRuntimeWindow> go_runtime;  // its Go runtime's GC CPU and heap; with requests
  std::string app_error;                      // why `app` is missing, when it is
};

// Sums TickDeltas into windows of a fixed length. Pure (time is passed in).
class WindowAggregator {
 public:
  WindowAggregator(absl::Duration window, absl::Time start) : window_(window), start_(start) {}
  void Add(const TickDelta& d);
  void AddError() { ++errors_; }
  bool Due(absl::Time now) const { return now - start_ >= window_; }
  // Closes the window at `now` and starts the next one.
  WindowReport Close(absl::Time now);

 private:
  absl::Duration window_;
  absl::Time start_;
  TickDelta sum_;
  uint64_t rss_max_ = 0;
  int rss_ticks_ = 0;
  std::string go_version_;
  std::string go_default_godebug_;
  int app_cpus_ = 0;
  int ticks_ = 0;
  int errors_ = 0;
  int measured_ticks_ = 0;
  double measured_seconds_ = 0;
  int cpu_stat_ticks_ = 0;
  int net_ticks_ = 0;
  double net_seconds_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_SAMPLER_H_
