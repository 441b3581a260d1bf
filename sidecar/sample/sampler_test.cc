#include "sidecar/sample/sampler.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;

// A fake /proc: files the sampler reads, rewritten between samples.
class FakeProc {
 public:
  FakeProc() {
    char tmpl[] = "/tmp/booster-fakeproc-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeProc() { std::system(("rm -rf " + root_).c_str()); }
  const std::string& root() const { return root_; }

  void Process(int pid, uint64_t start, uint64_t utime, uint64_t minflt, int64_t rss_pages) {
    Mkdir(absl::StrCat(root_, "/", pid));
    Mkdir(absl::StrCat(root_, "/", pid, "/task"));
    Mkdir(absl::StrCat(root_, "/", pid, "/net"));
    Write(absl::StrCat(root_, "/", pid, "/cmdline"), std::string("server\0--port\0", 14));
    Write(absl::StrCat(root_, "/", pid, "/cgroup"), "1:cpu:/kubepods/pod1/ctr-abc\n");
    Write(absl::StrCat(root_, "/", pid, "/stat"),
          absl::StrCat(pid, " (server) S 1 1 1 0 -1 0 ", minflt, " 0 0 0 ", utime,
                       " 0 0 0 20 0 2 0 ", start, " 1000 ", rss_pages, " 0"));
  }
  void SetCgroup(int pid, const std::string& content) {
    Write(absl::StrCat(root_, "/", pid, "/cgroup"), content);
  }
  void SetCommand(int pid, const std::string& cmdline) {
    Write(absl::StrCat(root_, "/", pid, "/cmdline"), cmdline);
  }
  void Thread(int pid, int tid, uint64_t wait_ns, uint64_t slices, uint64_t vcs, uint64_t ivcs,
              const std::string& cpus_allowed_list = "") {
    std::string t = absl::StrCat(root_, "/", pid, "/task/", tid);
    Mkdir(t);
    Write(t + "/schedstat", absl::StrCat("1000 ", wait_ns, " ", slices, "\n"));
    Write(t + "/status",
          absl::StrCat(
              "Name:\tserver\n",
              cpus_allowed_list.empty() ? "" : "Cpus_allowed_list:\t" + cpus_allowed_list + "\n",
              "voluntary_ctxt_switches:\t", vcs, "\nnonvoluntary_ctxt_switches:\t", ivcs, "\n"));
  }
  // The executable, /proc/<pid>/exe: a Go program's build info for `go_version`, else bytes
  // of no Go program.
  void Exe(int pid, const std::string& go_version, const std::string& default_godebug = "") {
    std::string bytes(4096, '\x90');
    if (!go_version.empty()) {
      // The module info between cmd/go's two 16-byte sentinels (go_build_info.h).
      std::string mod = std::string(16, '<') +
                        "path\tweb\nbuild\tDefaultGODEBUG=" + default_godebug + "\n" +
                        std::string(16, '>');
      std::string blob = std::string("\xff Go buildinf:", 14) + "\x08\x02" + std::string(16, '\0') +
                         static_cast<char>(go_version.size()) + go_version +
                         static_cast<char>(mod.size()) + mod;
      bytes.replace(1024, blob.size(), blob);
    }
    Write(absl::StrCat(root_, "/", pid, "/exe"), bytes);
  }
  // An executable that cannot be read (a directory: read(2) fails with EISDIR).
  void UnreadableExe(int pid) { Mkdir(absl::StrCat(root_, "/", pid, "/exe")); }
  void RemoveThread(int pid, int tid) {
    std::system(absl::StrCat("rm -rf ", root_, "/", pid, "/task/", tid).c_str());
  }
  void Net(int pid, int64_t overflows, int64_t retrans, int64_t out) {
    Write(absl::StrCat(root_, "/", pid, "/net/netstat"),
          absl::StrCat("TcpExt: ListenOverflows ListenDrops\nTcpExt: ", overflows, " ", overflows,
                       "\n"));
    Write(absl::StrCat(root_, "/", pid, "/net/snmp"),
          absl::StrCat("Tcp: RetransSegs OutSegs\nTcp: ", retrans, " ", out, "\n"));
  }
  void CpuStat(uint64_t periods, uint64_t throttled, uint64_t ns, const std::string& dir = "cg") {
    Mkdir(root_ + "/" + dir);
    Write(root_ + "/" + dir + "/cpu.stat", absl::StrCat("nr_periods ", periods, "\nnr_throttled ",
                                                        throttled, "\nthrottled_time ", ns, "\n"));
  }
  void CpuacctUsage(uint64_t ns, const std::string& dir = "cg") {
    Write(root_ + "/" + dir + "/cpuacct.usage", absl::StrCat(ns, "\n"));
  }
  void Mountinfo(int pid, const std::string& text) {
    Write(absl::StrCat(root_, "/", pid, "/mountinfo"), text);
  }

 private:
  static void Mkdir(const std::string& p) { mkdir(p.c_str(), 0755); }
  static void Write(const std::string& p, const std::string& s) {
    ASSERT_TRUE(WriteFileAtomically(p, s).ok()) << p;
  }
  std::string root_;
};

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

TEST(SamplerTest, FindsTargetsByCgroupAndCommand) {
  FakeProc p;
  p.Process(10, 5, 0, 0, 1);
  p.Process(11, 5, 0, 0, 1);
  TargetSelector by_cgroup;
  by_cgroup.cgroup_contains = "ctr-abc";
  EXPECT_THAT(*FindTargets(p.root(), by_cgroup), ElementsAre(10, 11));
  TargetSelector by_command;
  by_command.command_contains = "server --port";
  by_command.pids = {11};
  EXPECT_THAT(*FindTargets(p.root(), by_command), ElementsAre(11));
  TargetSelector miss;
  miss.cgroup_contains = "ctr-other";
  EXPECT_TRUE(FindTargets(p.root(), miss)->empty());
  EXPECT_FALSE(FindTargets(p.root(), TargetSelector{}).ok());
}

TEST(SamplerTest, PodPeersAreEveryProcessButTheAgentsContainerAndPause) {
  FakeProc p;
  p.Process(10, 5, 0, 0, 1);  // the app, cgroup .../ctr-abc
  p.Process(11, 5, 0, 0, 1);
  p.SetCgroup(11, "1:cpu:/kubepods/pod1/ctr-agent\n");  // the agent's own container
  p.Process(12, 5, 0, 0, 1);
  p.SetCommand(12, std::string("/pause\0", 7));  // the sandbox
  p.SetCgroup(12, "1:cpu:/kubepods/pod1/sandbox\n");
  TargetSelector peers;
  peers.pod_peers = true;
  peers.own_cgroup = "1:cpu:/kubepods/pod1/ctr-agent\n";
  EXPECT_THAT(*FindTargets(p.root(), peers), ElementsAre(10));
  // Alone in its PID namespace the agent finds nothing, and that is not an error.
  peers.own_cgroup = "1:cpu:/kubepods/pod1/ctr-abc\n";
  p.SetCgroup(11, "1:cpu:/kubepods/pod1/ctr-abc\n");
  absl::StatusOr<std::vector<int>> alone = FindTargets(p.root(), peers);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(alone->empty());
}

TEST(SamplerTest, DifferencesPerThreadAcrossBirthAndExit) {
  FakeProc p;
  p.Process(10, 5, /*utime=*/100, /*minflt=*/1000, /*rss_pages=*/10);
  p.Thread(10, 10, 1'000'000, 10, 5, 1);
  p.Thread(10, 11, 2'000'000, 20, 7, 2);
  p.Net(10, 3, 100, 1000);
  p.CpuStat(100, 10, 5'000'000);
  p.CpuacctUsage(7'000'000'000);
  CgroupPaths cg;
  cg.version = 1;
  cg.cpu = p.root() + "/cg";
  cg.cpuacct = p.root() + "/cg";
  ProcessSampler s(p.root(), cg);
  absl::StatusOr<TickDelta> base = s.Sample({10}, T(0));
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_EQ(base->cpu_ns, 0u);
  EXPECT_EQ(base->threads, 2);

  // Thread 11 exits, thread 12 is born, thread 10 moves on.
  p.Process(10, 5, 150, 1600, 20);
  p.Thread(10, 10, 4'000'000, 15, 9, 1);
  p.RemoveThread(10, 11);
  p.Thread(10, 12, 500'000, 2, 1, 3);
  p.Net(10, 5, 110, 2000);
  p.CpuStat(110, 14, 9'000'000);
  p.CpuacctUsage(7'800'000'000);
  absl::StatusOr<TickDelta> d = s.Sample({10}, T(2));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_DOUBLE_EQ(d->seconds, 2);
  EXPECT_EQ(d->cpu_ns, 800'000'000u);  // from cpuacct.usage
  EXPECT_EQ(d->runq_wait_ns, 3'000'000u + 500'000u);
  EXPECT_EQ(d->timeslices, 5u + 2u);
  EXPECT_EQ(d->voluntary_cs, 4u + 1u);
  EXPECT_EQ(d->involuntary_cs, 0u + 3u);
  EXPECT_EQ(d->minor_faults, 600u);
  EXPECT_EQ(d->nr_periods, 10u);
  EXPECT_EQ(d->nr_throttled, 4u);
  EXPECT_EQ(d->throttled_ns, 4'000'000u);
  EXPECT_EQ(d->listen_overflows, 2);
  EXPECT_EQ(d->tcp_retrans_segs, 10);
  EXPECT_EQ(d->tcp_out_segs, 1000);
  EXPECT_EQ(d->rss_bytes, 20u * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(d->threads, 2);
  EXPECT_TRUE(d->procs_read);
  EXPECT_TRUE(d->cpu_stat_read);
  EXPECT_TRUE(d->net_read);
  // The baseline covers nothing.
  EXPECT_FALSE(base->procs_read || base->cpu_stat_read || base->net_read);
}

// Two app containers, each in its own cgroup: CPU and throttling are their sums; a cgroup
// added later starts as baseline (its counter so far is not this tick's CPU).
TEST(SamplerTest, SumsTheCgroupsOfEveryContainer) {
  FakeProc p;
  p.Process(10, 5, 0, 0, 1);
  p.Thread(10, 10, 0, 0, 0, 0);
  p.CpuStat(100, 10, 0, "a");
  p.CpuacctUsage(1'000'000'000, "a");
  p.CpuStat(50, 0, 0, "b");
  p.CpuacctUsage(5'000'000'000, "b");
  auto cg = [&](const std::string& d) {
    CgroupPaths c;
    c.version = 1;
    c.cpu = c.cpuacct = p.root() + "/" + d;
    return c;
  };
  ProcessSampler s(p.root(), std::vector<CgroupPaths>{cg("a")});
  ASSERT_TRUE(s.Sample({10}, T(0)).ok());
  s.SetCgroups({cg("a"), cg("b"), cg("a")});  // duplicates count once
  p.CpuStat(110, 12, 0, "a");
  p.CpuacctUsage(1'300'000'000, "a");
  p.CpuStat(55, 1, 0, "b");
  p.CpuacctUsage(5'100'000'000, "b");
  absl::StatusOr<TickDelta> d = s.Sample({10}, T(1));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nr_periods, 10u);  // b is baseline
  EXPECT_EQ(d->cpu_ns, 0u);       // b's usage is unknown this tick: fall back to the process's
  p.CpuStat(120, 15, 0, "a");
  p.CpuacctUsage(1'500'000'000, "a");
  p.CpuStat(65, 3, 0, "b");
  p.CpuacctUsage(5'400'000'000, "b");
  d = s.Sample({10}, T(2));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->nr_periods, 10u + 10u);
  EXPECT_EQ(d->nr_throttled, 3u + 2u);
  EXPECT_EQ(d->cpu_ns, 200'000'000u + 300'000'000u);
}

TEST(SamplerTest, ContainerNameFromTheKubeletsTerminationLogMount) {
  const std::string mounts =
      "1310 1290 0:5 / /dev rw,nosuid - tmpfs tmpfs rw\n"
      "1320 1290 8:1 /var/lib/kubelet/pods/4f1c-uid/etc-hosts /etc/hosts rw - ext4 /dev/sda1 rw\n"
      "1321 1290 8:1 /var/lib/kubelet/pods/4f1c-uid/containers/web/8e7a61b2 "
      "/dev/termination-log rw - ext4 /dev/sda1 rw\n";
  EXPECT_EQ(ContainerNameFromMountinfo(mounts, ""), "web");
  EXPECT_EQ(ContainerNameFromMountinfo(mounts, "4f1c-uid"), "web");
  EXPECT_EQ(ContainerNameFromMountinfo(mounts, "other-uid"), "");
  // /var/lib/kubelet on its own filesystem: the root field starts below it.
  EXPECT_EQ(ContainerNameFromMountinfo(
                "99 1 8:2 /pods/u1/containers/sidecar-x/0a1b /dev/termination-log rw - xfs "
                "/dev/sdb rw\n",
                "u1"),
            "sidecar-x");
  EXPECT_EQ(ContainerNameFromMountinfo("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", ""), "");
  EXPECT_EQ(ContainerNameFromMountinfo("1 0 8:1 /x/containers/web/id / rw - ext4 d rw\n", ""),
            "");  // no pods/<uid> above it
}

TEST(SamplerTest, PodPeersOfTheNamedContainersOnly) {
  FakeProc p;
  auto mount = [](const std::string& name) {
    return "7 1 8:1 /var/lib/kubelet/pods/u1/containers/" + name +
           "/1234abcd /dev/termination-log rw - ext4 /dev/sda1 rw\n";
  };
  p.Process(10, 5, 0, 0, 1);
  p.Mountinfo(10, mount("web"));
  p.Process(11, 5, 0, 0, 1);
  p.Mountinfo(11, mount("istio-proxy"));
  p.Process(12, 5, 0, 0, 1);
  p.Mountinfo(12, mount("web"));
  TargetSelector sel;
  sel.pod_peers = true;
  sel.pod_uid = "u1";
  EXPECT_THAT(*FindTargets(p.root(), sel), ElementsAre(10, 11, 12));
  sel.containers = {"web"};
  EXPECT_THAT(*FindTargets(p.root(), sel), ElementsAre(10, 12));
  sel.containers = {"web", "istio-proxy"};
  EXPECT_THAT(*FindTargets(p.root(), sel), ElementsAre(10, 11, 12));
  // No process tells its container (no kubelet mounts): every peer is kept.
  for (int pid : {10, 11, 12}) p.Mountinfo(pid, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
  sel.containers = {"web"};
  EXPECT_THAT(*FindTargets(p.root(), sel), ElementsAre(10, 11, 12));
}

TEST(SamplerTest, PidReuseIsABaselineNotADelta) {
  FakeProc p;
  p.Process(10, 5, 100, 1000, 1);
  p.Thread(10, 10, 1'000'000, 10, 5, 1);
  ProcessSampler s(p.root(), CgroupPaths{});
  ASSERT_TRUE(s.Sample({10}, T(0)).ok());
  p.Process(10, /*start=*/999, 3, 10, 1);  // another process got pid 10
  p.Thread(10, 10, 50'000'000, 1, 1, 1);
  absl::StatusOr<TickDelta> d = s.Sample({10}, T(1));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cpu_ns, 0u);
  EXPECT_EQ(d->runq_wait_ns, 0u);
  EXPECT_EQ(d->minor_faults, 0u);
}

// The Go version of the first target that is a Go program, and the CPUs that process may
// run on; each executable read once per process.
TEST(SamplerTest, TheApplicationsGoVersionAndCpus) {
  FakeProc p;
  p.Process(10, 5, 0, 0, 1);  // a shell: not a Go program
  p.Thread(10, 10, 0, 0, 0, 0, "0-1");
  p.Exe(10, "");
  p.Process(11, 5, 0, 0, 1);  // the Go server
  p.Thread(11, 11, 0, 0, 0, 0, "0-3,8");
  p.Thread(11, 12, 0, 0, 0, 0, "2");  // a pinned thread is not the process's affinity
  p.Exe(11, "go1.26.0", "containermaxprocs=0");
  ProcessSampler s(p.root(), CgroupPaths{});
  absl::StatusOr<TickDelta> d = s.Sample({10, 11}, T(0));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->go_version, "go1.26.0") << "the baseline carries the facts too";
  EXPECT_EQ(d->go_default_godebug, "containermaxprocs=0");
  EXPECT_EQ(d->app_cpus, 5);
  EXPECT_TRUE(s.TakeNotes().empty());

  // The executable is not read again while the process lives ...
  p.Exe(11, "go1.99.0");
  d = s.Sample({10, 11}, T(1));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->go_version, "go1.26.0");
  // ... but its affinity is, every tick.
  p.Thread(11, 11, 0, 0, 0, 0, "0-1");
  EXPECT_EQ(s.Sample({10, 11}, T(2))->app_cpus, 2);
  // A new process under the same pid is read again.
  p.Process(11, /*start=*/777, 0, 0, 1);
  d = s.Sample({10, 11}, T(3));
  EXPECT_EQ(d->go_version, "go1.99.0");
  EXPECT_EQ(d->go_default_godebug, "");

  // No Go program among the targets: no version, the first target's CPUs.
  d = s.Sample({10}, T(4));
  EXPECT_EQ(d->go_version, "");
  EXPECT_EQ(d->go_default_godebug, "");
  EXPECT_EQ(s.Sample({10}, T(5))->app_cpus, 2);
  // No Cpus_allowed_list: unknown, 0.
  p.Thread(10, 10, 0, 0, 0, 0);
  EXPECT_EQ(s.Sample({10}, T(6))->app_cpus, 0);
}

TEST(SamplerTest, AnUnreadableExecutableIsNoGoVersionAndOneNote) {
  FakeProc p;
  p.Process(10, 5, 0, 0, 1);
  p.Thread(10, 10, 0, 0, 0, 0, "0-3");
  p.UnreadableExe(10);
  p.Process(11, 5, 0, 0, 1);
  p.Thread(11, 11, 0, 0, 0, 0, "0");
  p.Exe(11, "go1.25.3");
  ProcessSampler s(p.root(), CgroupPaths{});
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<TickDelta> d = s.Sample({10, 11}, T(i));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->go_version, "go1.25.3");
    EXPECT_EQ(d->app_cpus, 1) << "the Go program's, not the first target's";
    std::vector<std::string> notes = s.TakeNotes();
    if (i == 0) {
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_THAT(notes[0], ::testing::StartsWith("the Go version of process 10 is unknown"));
      EXPECT_THAT(notes[0], ::testing::HasSubstr(p.root() + "/10/exe"));
    } else {
      EXPECT_TRUE(notes.empty()) << "once per process, not every tick";
    }
  }
  // The same process, unreadable, alone: no version, and still no second note.
  EXPECT_EQ(s.Sample({10}, T(3))->go_version, "");
  EXPECT_TRUE(s.TakeNotes().empty());
}

TEST(SamplerTest, AllTargetsGoneIsAnError) {
  FakeProc p;
  ProcessSampler s(p.root(), CgroupPaths{});
  EXPECT_EQ(s.Sample({12345}, T(0)).status().code(), absl::StatusCode::kNotFound);
}

TEST(SamplerTest, WindowAggregatesRates) {
  WindowAggregator w(absl::Seconds(10), T(0));
  TickDelta d;
  d.seconds = 1;
  d.cpu_ns = 500'000'000;
  d.runq_wait_ns = 100'000'000;
  d.timeslices = 100;
  d.voluntary_cs = 10;
  d.nr_periods = 10;
  d.nr_throttled = 5;
  d.throttled_ns = 50'000'000;
  d.tcp_out_segs = 100;
  d.tcp_retrans_segs = 1;
  d.procs_read = d.cpu_stat_read = d.net_read = true;
  d.processes = 1;
  d.go_version = "go1.26.0";
  d.go_default_godebug = "updatemaxprocs=0";
  d.app_cpus = 4;
  for (int i = 0; i < 10; ++i) {
    d.rss_bytes = 1000 + i * (i % 2 == 0 ? 100 : 0);
    w.Add(d);
    EXPECT_EQ(w.Due(T(i + 1)), i == 9);
  }
  w.AddError();
  WindowReport r = w.Close(T(10));
  EXPECT_DOUBLE_EQ(r.seconds, 10);
  EXPECT_EQ(r.ticks, 10);
  EXPECT_EQ(r.tick_errors, 1);
  EXPECT_DOUBLE_EQ(r.cpu_cores, 0.5);
  EXPECT_DOUBLE_EQ(r.runq_delay_per_second, 0.1);
  EXPECT_DOUBLE_EQ(r.runq_delay_avg_us, 1000);
  EXPECT_DOUBLE_EQ(r.voluntary_cs_rate, 10);
  EXPECT_DOUBLE_EQ(r.throttled_ratio, 0.5);
  EXPECT_DOUBLE_EQ(r.throttled_seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.tcp_retrans_ratio, 0.01);
  EXPECT_EQ(r.rss_max_bytes, 1800u);
  EXPECT_EQ(r.rss_last_bytes, 1000u);
  EXPECT_EQ(r.rss_ticks, 10);
  EXPECT_EQ(r.go_version, "go1.26.0");
  EXPECT_EQ(r.go_default_godebug, "updatemaxprocs=0");
  EXPECT_EQ(r.app_cpus, 4);
  EXPECT_EQ(r.measured_ticks, 10);
  EXPECT_DOUBLE_EQ(r.measured_seconds, 10);
  EXPECT_DOUBLE_EQ(r.cpu_seconds, 5);
  EXPECT_DOUBLE_EQ(r.runq_wait_seconds, 1);
  EXPECT_EQ(r.cpu_stat_ticks, 10);
  EXPECT_EQ(r.net_ticks, 10);
  EXPECT_DOUBLE_EQ(r.net_seconds, 10);
  // The next window starts empty at the close time.
  EXPECT_FALSE(w.Due(T(19)));
  WindowReport empty = w.Close(T(20));
  EXPECT_EQ(empty.ticks, 0);
  EXPECT_EQ(empty.rss_ticks, 0);
  EXPECT_EQ(empty.go_version, "") << "facts are of the window that read them";
  EXPECT_EQ(empty.go_default_godebug, "");
  EXPECT_EQ(empty.app_cpus, 0);
}

// Ticks without any target (the app not started yet) neither count as measured nor dilute
// the rates of the ticks that had one.
TEST(SamplerTest, RatesCoverOnlyMeasuredTicks) {
  WindowAggregator w(absl::Seconds(10), T(0));
  TickDelta idle;
  idle.seconds = 1;
  TickDelta busy;
  busy.seconds = 1;
  busy.procs_read = true;
  busy.processes = 1;
  busy.cpu_ns = 1'000'000'000;
  busy.go_version = "go1.24.0";
  busy.app_cpus = 2;
  for (int i = 0; i < 5; ++i) w.Add(busy);
  for (int i = 0; i < 5; ++i) w.Add(idle);
  WindowReport r = w.Close(T(10));
  EXPECT_EQ(r.rss_ticks, 5);
  EXPECT_EQ(r.go_version, "go1.24.0") << "ticks without a target keep the last facts read";
  EXPECT_EQ(r.app_cpus, 2);
  EXPECT_DOUBLE_EQ(r.seconds, 10);
  EXPECT_EQ(r.measured_ticks, 5);
  EXPECT_DOUBLE_EQ(r.measured_seconds, 5);
  EXPECT_DOUBLE_EQ(r.cpu_cores, 1);
  EXPECT_EQ(r.cpu_stat_ticks, 0);
  EXPECT_EQ(r.net_ticks, 0);
}

TEST(SamplerTest, MeasuresARealBusyProcess) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A fresh program, not a fork of this one: under ThreadSanitizer a forked child also
    // runs the sanitizer's background thread, and the test counts the child's threads.
    execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
    _exit(127);
  }
  ProcessSampler s("/proc", CgroupPaths{});
  ASSERT_TRUE(s.Sample({child}, absl::Now()).ok());
  // Wait until the child has run for at least 20 ticks of CPU (it spins), then sample.
  absl::StatusOr<TickDelta> d;
  uint64_t cpu = 0;
  for (int i = 0; i < 500 && cpu < 200'000'000; ++i) {
    usleep(10'000);
    d = s.Sample({child}, absl::Now());
    ASSERT_TRUE(d.ok()) << d.status();
    cpu += d->cpu_ns;
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(cpu, 200'000'000u);
  EXPECT_EQ(d->threads, 1);
  EXPECT_GT(d->rss_bytes, 0u);
  EXPECT_EQ(d->go_version, "") << "/bin/sh is no Go program";
  EXPECT_GE(d->app_cpus, 1);
  EXPECT_TRUE(s.TakeNotes().empty()) << "its own child's executable is readable";
}

}  // namespace
}  // namespace booster::agent
