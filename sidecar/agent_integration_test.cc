// booster-agent end to end on this machine (root, label unit): a real network namespace
// and real cgroup v1 groups (cpu, cpuset, memory) under unique names, a real
// multi-threaded workload in them, and the real agent binary. Checks that affinity,
// sysctls (inside the namespace only) and the control page change as planned and are
// restored exactly on SIGTERM, and after SIGKILL followed by a restart; and that a real
// HTTP application's histogram, scraped inside the namespace, shows up as measured
// latency and throughput on the agent's own /metrics there. Everything is cleaned up in
// TearDown, also when an assertion fails.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/apply/control_file.h"
#include "sidecar/apply/journal.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/http_get.h"
#include "sidecar/testing/test_app_server.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;

const char* const kControllers[] = {"cpu", "cpuset", "memory"};

std::string Shell(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (rc != nullptr) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

std::vector<int> Affinity(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof(set), &set) != 0) return {};
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

std::map<int, std::vector<int>> ThreadAffinities(int pid) {
  std::map<int, std::vector<int>> out;
  std::string listing = Shell(absl::StrCat("ls /proc/", pid, "/task"));
  for (absl::string_view t : absl::StrSplit(listing, '\n', absl::SkipEmpty())) {
    int tid = 0;
    if (absl::SimpleAtoi(t, &tid)) out[tid] = Affinity(tid);
  }
  return out;
}

// Polls `pred` until true or `timeout`; the only waiting the test does.
template <typename Pred>
bool WaitFor(Pred pred, absl::Duration timeout = absl::Seconds(30)) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    usleep(20'000);
  }
  return pred();
}

class AgentIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "machine: needs root";
    if (access("/sys/fs/cgroup/cpuset/cpuset.cpus", F_OK) != 0) GTEST_SKIP() << "machine: needs cgroup v1";
    agent_bin_ = std::getenv("BOOSTER_AGENT_BIN") ? std::getenv("BOOSTER_AGENT_BIN") : "";
    ASSERT_FALSE(agent_bin_.empty()) << "BOOSTER_AGENT_BIN not set";
    name_ = absl::StrCat("booster-it-", getpid(), "-", absl::ToUnixMicros(absl::Now()) % 1000000);
    char tmpl[] = "/tmp/booster-it-XXXXXX";
    dir_ = mkdtemp(tmpl);

    int rc = 0;
    Shell("ip netns add " + name_, &rc);
    ASSERT_EQ(rc, 0) << "ip netns add failed";
    netns_created_ = true;
    for (const char* c : kControllers) {
      std::string d = absl::StrCat("/sys/fs/cgroup/", c, "/", name_);
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
      cgroups_.push_back(d);
    }
    std::string cpus = *ReadFile("/sys/fs/cgroup/cpuset/cpuset.cpus");
    std::string mems = *ReadFile("/sys/fs/cgroup/cpuset/cpuset.mems");
    ASSERT_TRUE(WriteExisting(cgroups_[1] + "/cpuset.cpus", cpus).ok());
    ASSERT_TRUE(WriteExisting(cgroups_[1] + "/cpuset.mems", mems).ok());
    // 0.5 cores: the plan asks for one CPU, so pinning visibly changes affinity.
    ASSERT_TRUE(WriteExisting(cgroups_[0] + "/cpu.cfs_quota_us", "50000").ok());
    ASSERT_TRUE(WriteExisting(cgroups_[2] + "/memory.limit_in_bytes", "268435456").ok());
    all_cpus_ = *ParseCpuList(cpus);
    if (all_cpus_.size() < 2) GTEST_SKIP() << "machine: needs two CPUs";

    StartWorkload();
  }

  void TearDown() override {
    for (pid_t* p : {&agent_, &workload_}) {
      if (*p > 0) {
        kill(*p, SIGKILL);
        waitpid(*p, nullptr, 0);
        *p = -1;
      }
    }
    // Anything still in the cgroups (there should be nothing) is killed before rmdir.
    for (const std::string& d : cgroups_) {
      absl::StatusOr<std::string> procs = ReadFile(d + "/cgroup.procs");
      if (procs.ok()) {
        for (absl::string_view p : absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
          int pid = 0;
          if (absl::SimpleAtoi(p, &pid)) kill(pid, SIGKILL);
        }
      }
    }
    for (const std::string& d : cgroups_) {
      for (int i = 0; i < 100 && rmdir(d.c_str()) != 0 && errno == EBUSY; ++i) usleep(20'000);
    }
    if (netns_created_) Shell("ip netns del " + name_);
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // python3 with three extra threads, in the cgroups and the network namespace.
  void StartWorkload() {
    std::string netns = "/run/netns/" + name_;
    workload_ = fork();
    ASSERT_GE(workload_, 0);
    if (workload_ == 0) {
      for (const char* c : kControllers) {
        std::string procs = absl::StrCat("/sys/fs/cgroup/", c, "/", name_, "/cgroup.procs");
        if (!WriteExisting(procs, absl::StrCat(getpid())).ok()) _exit(10);
      }
      int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(11);
      execlp("python3", "python3", "-c",
             "import threading, time\n"
             "for _ in range(3): threading.Thread(target=time.sleep, args=(3600,),"
             " daemon=True).start()\n"
             "time.sleep(3600)\n",
             nullptr);
      _exit(12);
    }
    ASSERT_TRUE(WaitFor([&] { return ThreadAffinities(workload_).size() == 4; }))
        << "workload did not start its threads";
  }

  std::string NetnsSysctl(const std::string& key) {
    return Shell(absl::StrCat("ip netns exec ", name_, " sysctl -n ", key));
  }

  pid_t StartAgent(bool with_directive, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {agent_bin_,        "run",
                                     "--state-dir",     dir_,
                                     "--target-cgroup", name_,
                                     "--netns",         "/run/netns/" + name_,
                                     "--report-file",   dir_ + "/report.jsonl",
                                     "--pod",           "it-pod",
                                     "--tick",          "0.1",
                                     "--window",        "0.5"};
    if (with_directive) {
      args.push_back("--directive-file");
      args.push_back(dir_ + "/directive");
    }
    args.insert(args.end(), extra.begin(), extra.end());
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }

  // Lines of the report file containing all of `needles`.
  int CountReportLines(const std::vector<std::string>& needles) {
    absl::StatusOr<std::string> text = ReadFile(dir_ + "/report.jsonl");
    if (!text.ok()) return 0;
    int n = 0;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      bool all = true;
      for (const std::string& s : needles) all &= absl::StrContains(line, s);
      n += all ? 1 : 0;
    }
    return n;
  }

  // The CPUs of the plan in the first successful "apply" line of the report file.
  std::vector<int> PlannedCpus() {
    std::string text = *ReadFile(dir_ + "/report.jsonl");
    size_t apply = text.find("\"action\":\"apply\",\"ok\":true");
    if (apply == std::string::npos) return {};
    const std::string key = "\"plan\":{\"cpus\":[";
    size_t at = text.find(key, apply);
    if (at == std::string::npos) return {};
    size_t begin = at + key.size();
    size_t end = text.find(']', begin);
    if (end == std::string::npos) return {};
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text.substr(begin, end - begin));
    return cpus.ok() ? *cpus : std::vector<int>{};
  }

  std::string agent_bin_;
  std::string name_;
  std::string dir_;
  bool netns_created_ = false;
  std::vector<std::string> cgroups_;
  std::vector<int> all_cpus_;
  pid_t workload_ = -1;
  pid_t agent_ = -1;
};

TEST_F(AgentIntegrationTest, AppliesThenRestoresOnSigtermAndAfterSigkillRestart) {
  const std::map<int, std::vector<int>> threads_before = ThreadAffinities(workload_);
  const std::string host_somaxconn = *ReadFile("/proc/sys/net/core/somaxconn");
  const std::string somaxconn_before = NetnsSysctl("net.core.somaxconn");
  const std::string fin_before = NetnsSysctl("net.ipv4.tcp_fin_timeout");
  const std::string range_before = NetnsSysctl("net.ipv4.ip_local_port_range");
  ASSERT_FALSE(somaxconn_before.empty());
  const std::string somaxconn_new = absl::StrCat(std::stoi(somaxconn_before) + 1234);

  ASSERT_TRUE(WriteFileAtomically(dir_ + "/directive",
                                  absl::StrCat("generation = 1\naction = apply\narm = canary\n"
                                               "placement = true\n"
                                               "sysctl.net.core.somaxconn = ",
                                               somaxconn_new,
                                               "\n"
                                               "sysctl.net.ipv4.tcp_fin_timeout = 17\n"
                                               "sysctl.net.ipv4.ip_local_port_range = 20000 40000\n"
                                               "runtime.listen_backlog = 4096\n"
                                               "runtime.thread_placement = pin\n"))
                  .ok());

  // ---- apply -----------------------------------------------------------------------
  agent_ = StartAgent(true);
  ASSERT_TRUE(WaitFor([&] {
    return CountReportLines({"\"action\":\"apply\"", "\"ok\":true"}) == 1;
  })) << *ReadFile(dir_ + "/report.jsonl");
  std::vector<int> plan = PlannedCpus();
  ASSERT_EQ(plan.size(), 1u) << "0.5-core quota should give one CPU";
  for (const auto& [tid, mask] : ThreadAffinities(workload_)) {
    EXPECT_EQ(mask, plan) << "thread " << tid;
  }
  EXPECT_EQ(NetnsSysctl("net.core.somaxconn"), somaxconn_new);
  EXPECT_EQ(NetnsSysctl("net.ipv4.tcp_fin_timeout"), "17");
  EXPECT_EQ(NetnsSysctl("net.ipv4.ip_local_port_range"), "20000\t40000");
  EXPECT_EQ(*ReadFile("/proc/sys/net/core/somaxconn"), host_somaxconn) << "host netns touched";
  {
    absl::StatusOr<std::unique_ptr<ControlFile>> cf = ControlFile::Open(dir_ + "/control");
    ASSERT_TRUE(cf.ok());
    absl::StatusOr<booster_control> page = (*cf)->Read();
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(page->features, static_cast<uint64_t>(BOOSTER_FEATURE_LISTEN_BACKLOG |
                                                    BOOSTER_FEATURE_THREAD_PLACEMENT));
    EXPECT_EQ(page->listen_backlog, 4096);
    ASSERT_EQ(page->cpu_count, 1u);
    EXPECT_EQ(page->cpus[0], plan[0]);
  }
  // The window reports measure the workload in its cgroup.
  ASSERT_TRUE(WaitFor([&] {
    return CountReportLines({"\"type\":\"report\"", "\"processes\":1"}) >= 1;
  }));

  // ---- SIGTERM: everything back ------------------------------------------------------
  kill(agent_, SIGTERM);
  int status = 0;
  waitpid(agent_, &status, 0);
  agent_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(ThreadAffinities(workload_), threads_before);
  EXPECT_EQ(NetnsSysctl("net.core.somaxconn"), somaxconn_before);
  EXPECT_EQ(NetnsSysctl("net.ipv4.tcp_fin_timeout"), fin_before);
  EXPECT_EQ(NetnsSysctl("net.ipv4.ip_local_port_range"), range_before);
  {
    absl::StatusOr<std::unique_ptr<ControlFile>> cf = ControlFile::Open(dir_ + "/control");
    ASSERT_TRUE(cf.ok());
    EXPECT_EQ((*cf)->Read()->features, 0u);
    EXPECT_EQ((*cf)->Read()->cpu_count, 0u);
  }
  EXPECT_TRUE(Journal::Open(dir_ + "/agent.journal")->empty());
  EXPECT_EQ(CountReportLines({"\"action\":\"shutdown\"", "\"ok\":true"}), 1);

  // ---- SIGKILL mid-flight, then a restart reverts ---------------------------------------
  agent_ = StartAgent(true);
  ASSERT_TRUE(WaitFor([&] {
    return CountReportLines({"\"action\":\"apply\"", "\"ok\":true"}) == 2;
  }));
  ASSERT_EQ(NetnsSysctl("net.core.somaxconn"), somaxconn_new);
  kill(agent_, SIGKILL);
  waitpid(agent_, nullptr, 0);
  agent_ = -1;
  // Still applied: nobody reverted.
  EXPECT_EQ(NetnsSysctl("net.core.somaxconn"), somaxconn_new);
  EXPECT_EQ(ThreadAffinities(workload_).begin()->second, PlannedCpus());
  EXPECT_FALSE(Journal::Open(dir_ + "/agent.journal")->empty());

  agent_ = StartAgent(false);  // no directive: it only recovers, then observes
  ASSERT_TRUE(WaitFor([&] {
    return CountReportLines({"\"action\":\"recover\"", "\"ok\":true"}) == 1;
  })) << *ReadFile(dir_ + "/report.jsonl");
  EXPECT_EQ(ThreadAffinities(workload_), threads_before);
  EXPECT_EQ(NetnsSysctl("net.core.somaxconn"), somaxconn_before);
  EXPECT_EQ(NetnsSysctl("net.ipv4.tcp_fin_timeout"), fin_before);
  EXPECT_EQ(NetnsSysctl("net.ipv4.ip_local_port_range"), range_before);
  {
    absl::StatusOr<std::unique_ptr<ControlFile>> cf = ControlFile::Open(dir_ + "/control");
    EXPECT_EQ((*cf)->Read()->features, 0u);
  }
  EXPECT_TRUE(Journal::Open(dir_ + "/agent.journal")->empty());
  kill(agent_, SIGTERM);
  waitpid(agent_, &status, 0);
  agent_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(*ReadFile("/proc/sys/net/core/somaxconn"), host_somaxconn);
}

// The value of `metric` in the agent's /metrics text, or NaN when it has no series.
double WindowValue(const std::string& text, const std::string& metric) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "booster_agent_window_value{") ||
        !absl::StrContains(line, absl::StrCat("metric=\"", metric, "\""))) {
      continue;
    }
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return NAN;
}

TEST_F(AgentIntegrationTest, ScrapesARealApplicationInsideThePod) {
  int rc = 0;
  Shell(absl::StrCat("ip netns exec ", name_, " ip link set lo up"), &rc);
  ASSERT_EQ(rc, 0);
  const std::string netns = "/run/netns/" + name_;
  // The application: an HTTP server with a latency histogram, on 127.0.0.1:8080 of the
  // pod's network namespace, in the pod's cgroups.
  TestAppServer app;
  ASSERT_TRUE(app.Start(8080, [&] {
    for (const char* c : kControllers) {
      std::string procs = absl::StrCat("/sys/fs/cgroup/", c, "/", name_, "/cgroup.procs");
      if (!WriteExisting(procs, absl::StrCat(getpid())).ok()) return 10;
    }
    int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return 11;
    return 0;
  }));
  agent_ = StartAgent(false, {"--metrics-address", "127.0.0.1:9901", "--app-metrics",
                              "{\"port\": 8080}", "--profile", "shop/web", "--arm", "canary"});

  // Inside the namespace (loopback only): requests to the application, bounded in count
  // and time, until the agent's /metrics shows a window with them measured.
  pid_t client = fork();
  ASSERT_GE(client, 0);
  if (client == 0) {
    int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(11);
    absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (int i = 0; i < 20000 && absl::Now() < deadline; ++i) {
      HttpGet(i % 10 == 0 ? "http://127.0.0.1:8080/fail" : "http://127.0.0.1:8080/",
              absl::Seconds(2))
          .IgnoreError();
      if (i % 20 != 0) continue;
      absl::StatusOr<std::string> m = HttpGet("http://127.0.0.1:9901/metrics", absl::Seconds(2));
      if (!m.ok() || std::isnan(WindowValue(*m, "latencyP99")) ||
          !(WindowValue(*m, "errorRate") > 0)) {
        continue;
      }
      absl::StatusOr<HttpResponse> h = HttpFetch("http://127.0.0.1:9901/healthz", absl::Seconds(2));
      if (!WriteFileAtomically(dir_ + "/agent_metrics.txt", *m).ok() ||
          !WriteFileAtomically(dir_ + "/healthz.txt",
                               h.ok() ? absl::StrCat(h->code, " ", h->body) : "error")
               .ok()) {
        _exit(12);
      }
      _exit(0);
    }
    _exit(1);
  }
  int status = 0;
  waitpid(client, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the agent's /metrics never showed the application's requests; reports:\n"
      << ReadFile(dir_ + "/report.jsonl").value_or("");

  std::string text = *ReadFile(dir_ + "/agent_metrics.txt");
  double p50 = WindowValue(text, "latencyP50"), p99 = WindowValue(text, "latencyP99");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, 1.0);  // the server's highest finite bound
  EXPECT_GT(WindowValue(text, "throughput"), 0);
  EXPECT_GT(WindowValue(text, "errorRate"), 0);
  EXPECT_LT(WindowValue(text, "errorRate"), 0.5);
  EXPECT_GT(WindowValue(text, "cpuPerRequest"), 0);
  EXPECT_GE(WindowValue(text, "runQueueDelay"), 0);
  EXPECT_GE(WindowValue(text, "listenOverflows"), 0);  // the namespace's own counters
  EXPECT_THAT(text, HasSubstr("arm=\"canary\""));
  // The cpu cgroup has a 0.5-core quota: throttling is measured, not missing.
  EXPECT_GE(WindowValue(text, "cpuThrottling"), 0);
  EXPECT_EQ(*ReadFile(dir_ + "/healthz.txt"), "200 ok\n");
  // The report file carries the same windows with a value (not null) for the latency.
  EXPECT_GT(CountReportLines({"\"profile\":\"shop/web\"", "\"latencyP99\":{\"value\":"}),
            CountReportLines({"\"profile\":\"shop/web\"", "\"latencyP99\":{\"value\":null"}));

  kill(agent_, SIGTERM);
  waitpid(agent_, &status, 0);
  agent_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(AgentIntegrationTest, RefusesANodeWideSysctlAndChangesNothing) {
  const std::map<int, std::vector<int>> threads_before = ThreadAffinities(workload_);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/directive",
                                  "generation = 1\naction = apply\nplacement = true\n"
                                  "sysctl.vm.swappiness = 1\n")
                  .ok());
  const std::string swappiness = *ReadFile("/proc/sys/vm/swappiness");
  agent_ = StartAgent(true);
  ASSERT_TRUE(WaitFor([&] { return CountReportLines({"\"action\":\"reject\""}) == 1; }));
  std::string text = *ReadFile(dir_ + "/report.jsonl");
  EXPECT_THAT(text, HasSubstr("vm.swappiness is not namespaced"));
  EXPECT_EQ(*ReadFile("/proc/sys/vm/swappiness"), swappiness);
  EXPECT_EQ(ThreadAffinities(workload_), threads_before);
  kill(agent_, SIGTERM);
  waitpid(agent_, nullptr, 0);
  agent_ = -1;
}

}  // namespace
}  // namespace booster::agent
