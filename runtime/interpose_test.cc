// Real sockets, threads and clocks in a process running under LD_PRELOAD=libbooster.so
// (booster_probe), observed from outside: ss for backlogs, /proc for affinities and
// memory policy, getsockopt for socket options, clock_getres for clocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "booster/control.h"
#include "runtime/test_support.h"

namespace booster::runtime {
namespace {

using testing::AllowedCpus;
using testing::ControlFile;
using testing::Fields;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ListenBacklog;
using testing::ParseList;
using ::testing::StartsWith;
using testing::Subprocess;
using testing::TempDir;
using testing::ThreadCpus;
using testing::WaitFor;

class InterposeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::LibPath().empty()) << "BOOSTER_LIB not set";
    ASSERT_FALSE(testing::ProbePath().empty()) << "BOOSTER_PROBE not set";
  }

  // Starts the probe with libbooster.so preloaded and `env` added.
  std::unique_ptr<Subprocess> Probe(std::map<std::string, std::string> env = {},
                                    std::vector<int> cpus = {}, bool preload = true) {
    if (preload) env["LD_PRELOAD"] = testing::PreloadValue();
    auto p = std::make_unique<Subprocess>(
        Subprocess::Options{.argv = {testing::ProbePath()}, .env = env, .cpus = cpus});
    EXPECT_TRUE(p->started());
    return p;
  }

  // "listen <backlog>" -> port, fd.
  static std::pair<int, int> Listen(Subprocess& p, int backlog) {
    std::string answer = p.Ask("listen " + std::to_string(backlog));
    int port = -1, fd = -1;
    EXPECT_EQ(sscanf(answer.c_str(), "port %d fd %d", &port, &fd), 2) << answer;
    return {port, fd};
  }

  static std::vector<pid_t> Threads(Subprocess& p, int n) {
    std::string answer = p.Ask("threads " + std::to_string(n));
    std::istringstream words(answer);
    std::string word;
    words >> word;
    EXPECT_EQ(word, "threads") << answer;
    std::vector<pid_t> tids;
    pid_t tid;
    while (words >> tid) tids.push_back(tid);
    EXPECT_EQ(tids.size(), static_cast<size_t>(n)) << answer;
    return tids;
  }

  // What the "unix" command answers in a process without the library.
  std::string UnixWithoutLibrary() {
    auto plain = Probe({}, {}, /*preload=*/false);
    std::string answer = plain->Ask("unix");
    EXPECT_THAT(answer, StartsWith("unix rc=-1 errno="));
    return answer;
  }

  static std::vector<int> ThreadCpuList(pid_t pid, pid_t tid) {
    return ParseList(ThreadCpus(pid)[tid]);
  }
};

// The POSIX read locks of this library's file in /proc/locks, by owner pid, as
// "start-end" ranges (the agent's view: sidecar/sample/preload_presence.h).
std::map<pid_t, std::string> PresenceLocks() {
  struct stat st {};
  EXPECT_EQ(stat(testing::LibPath().c_str(), &st), 0);
  char file[64];
  snprintf(file, sizeof(file), "%02x:%02x:%lu", major(st.st_dev), minor(st.st_dev),
           static_cast<unsigned long>(st.st_ino));
  std::ifstream locks("/proc/locks");
  std::map<pid_t, std::string> out;
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream f(line);
    std::string id, kind, advisory, mode, dev, start, end;
    pid_t pid = 0;
    if (!(f >> id >> kind >> advisory >> mode >> pid >> dev >> start >> end)) continue;
    if (kind == "POSIX" && mode == "READ" && dev == file) out[pid] = start + "-" + end;
  }
  return out;
}

// The library says it is loaded, to any reader of /proc/locks: byte 0 of its own file,
// read-locked by the process for its life, and again by a forked child; byte 1 stays
// free in a program that is not Go. Without the library there is no lock.
TEST_F(InterposeTest, ALoadedLibraryHoldsItsPresenceLock) {
  auto plain = Probe({}, {}, /*preload=*/false);
  ASSERT_FALSE(plain->Ask("affinity").empty());  // it runs
  EXPECT_EQ(PresenceLocks().count(plain->pid()), 0u);
  auto probe = Probe();
  std::string forked = probe->Ask("fork");
  pid_t child = 0;
  ASSERT_EQ(sscanf(forked.c_str(), "forked %d", &child), 1) << forked;
  std::map<pid_t, std::string> locks;
  ASSERT_TRUE(WaitFor([&] {
    locks = PresenceLocks();
    return locks.count(probe->pid()) == 1 && locks.count(child) == 1;
  })) << "no presence lock for the probe or its child";
  EXPECT_EQ(locks[probe->pid()], "0-0");
  EXPECT_EQ(locks[child], "0-0");
}

TEST_F(InterposeTest, DormantLibraryChangesNothing) {
  auto probe = Probe();
  auto [port, fd] = Listen(*probe, 5);
  EXPECT_EQ(ListenBacklog(port), 5);
  Fields(probe->Ask("connect " + std::to_string(port)));
  auto accepted = Fields(probe->Ask("accept " + std::to_string(fd)));
  EXPECT_EQ(accepted["nodelay"], 0);
  EXPECT_EQ(accepted["busy_poll"], 0);
  for (pid_t tid : Threads(*probe, 3)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid), AllowedCpus());
  }
  EXPECT_EQ(probe->Ask("clock"), "clock 1 1 0");
  EXPECT_EQ(probe->Ask("mempolicy"), "mempolicy 0 0");  // MPOL_DEFAULT
  EXPECT_EQ(probe->Ask("unix"), UnixWithoutLibrary());
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_EQ(probe->Stderr(), "");
}

TEST_F(InterposeTest, ListenBacklogFloorRaisesSmallBacklogsOnly) {
  auto probe = Probe({{"BOOSTER_LISTEN_BACKLOG", "1000"}});
  EXPECT_EQ(ListenBacklog(Listen(*probe, 5).first), 1000);
  EXPECT_EQ(ListenBacklog(Listen(*probe, 2000).first), std::min(2000, testing::Somaxconn()));
}

TEST_F(InterposeTest, KernelStillCapsBacklogAtSomaxconn) {
  auto probe = Probe({{"BOOSTER_LISTEN_BACKLOG", "1048576"}});
  EXPECT_EQ(ListenBacklog(Listen(*probe, 5).first), testing::Somaxconn());
}

TEST_F(InterposeTest, TcpOptionsOnAcceptedAndConnectedSockets) {
  auto probe = Probe({{"BOOSTER_TCP_NODELAY", "1"},
                      {"BOOSTER_TCP_QUICKACK", "1"},
                      {"BOOSTER_BUSY_POLL", "50"},
                      {"BOOSTER_RCVBUF", "64k"},
                      {"BOOSTER_SNDBUF", "96k"},
                      {"BOOSTER_DEBUG", "1"}});
  auto [port, fd] = Listen(*probe, 16);
  auto connected = Fields(probe->Ask("connect " + std::to_string(port)));
  auto accepted = Fields(probe->Ask("accept " + std::to_string(fd)));
  for (auto* side : {&connected, &accepted}) {
    EXPECT_EQ((*side)["nodelay"], 1);
    EXPECT_EQ((*side)["busy_poll"], 50);
    EXPECT_EQ((*side)["rcvbuf"], 2 * 64 * 1024);  // the kernel reports twice what was set
    EXPECT_EQ((*side)["sndbuf"], 2 * 96 * 1024);
  }
  // AF_UNIX sockets are left alone and see the same errno as without the library.
  EXPECT_EQ(probe->Ask("unix"), UnixWithoutLibrary());
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_EQ(probe->Stderr(), "") << "no option failed";
}

TEST_F(InterposeTest, ThreadsArePinnedRoundRobinOverTheCpus) {
  std::vector<int> allowed = AllowedCpus();
  auto probe = Probe({{"BOOSTER_THREADS", "pin"}});
  // The main thread takes the first CPU; every new thread takes the next one.
  std::map<int, int> per_cpu;
  auto main_cpus = ParseList(probe->Ask("affinity").substr(strlen("affinity ")));
  ASSERT_EQ(main_cpus.size(), 1u);
  per_cpu[main_cpus[0]]++;
  const int kThreads = 4 * static_cast<int>(allowed.size()) - 1;
  for (pid_t tid : Threads(*probe, kThreads)) {
    std::vector<int> cpus = ThreadCpuList(probe->pid(), tid);
    ASSERT_EQ(cpus.size(), 1u) << "thread " << tid << " is not pinned";
    per_cpu[cpus[0]]++;
  }
  ASSERT_EQ(per_cpu.size(), allowed.size());
  for (auto [cpu, count] : per_cpu) EXPECT_EQ(count, 4) << "cpu " << cpu;
}

TEST_F(InterposeTest, ThreadsAreConfinedToTheCpuSet) {
  std::vector<int> allowed = AllowedCpus();
  int last = allowed.back();
  auto probe = Probe({{"BOOSTER_CPUS", std::to_string(last)}, {"BOOSTER_THREADS", "confine"}});
  for (pid_t tid : Threads(*probe, 3)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid), std::vector<int>{last});
  }
  EXPECT_EQ(probe->Ask("affinity"), "affinity " + std::to_string(last));
}

TEST_F(InterposeTest, PlacementNeverLeavesTheAllowedCpus) {
  std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "machine: needs two CPUs";
  // The process may run on the first CPU only; BOOSTER_CPUS names the second.
  auto probe =
      Probe({{"BOOSTER_CPUS", std::to_string(allowed[1])}, {"BOOSTER_DEBUG", "1"}}, {allowed[0]});
  for (pid_t tid : Threads(*probe, 2)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid), std::vector<int>{allowed[0]});
  }
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_THAT(probe->Stderr(), HasSubstr("none of the configured CPUs is allowed"));
}

TEST_F(InterposeTest, ApplicationChosenAffinityIsRespected) {
  std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "machine: needs two CPUs";
  auto probe = Probe({{"BOOSTER_CPUS", std::to_string(allowed[1])}, {"BOOSTER_THREADS", "pin"}});
  pid_t tid = 0;
  ASSERT_EQ(
      sscanf(probe->Ask("attrthread " + std::to_string(allowed[0])).c_str(), "attrthread %d", &tid),
      1);
  EXPECT_EQ(ThreadCpuList(probe->pid(), tid), std::vector<int>{allowed[0]});
  for (pid_t other : Threads(*probe, 1)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), other), std::vector<int>{allowed[1]});
  }
}

TEST_F(InterposeTest, CoarseClocksReportTheirResolution) {
  timespec coarse{};
  clock_getres(CLOCK_MONOTONIC_COARSE, &coarse);
  long coarse_ns = coarse.tv_sec * 1000000000L + coarse.tv_nsec;
  ASSERT_GT(coarse_ns, 1);
  auto probe = Probe({{"BOOSTER_CLOCK", "coarse"}});
  EXPECT_EQ(probe->Ask("clock"),
            "clock " + std::to_string(coarse_ns) + " " + std::to_string(coarse_ns) + " 0");
}

TEST_F(InterposeTest, CoarseClocksServeGettimeAndGettimeofday) {
  // 2000 back-to-back reads take well under a millisecond: a precise clock gives many
  // distinct values, a coarse one (a tick is 1-10 ms) one or two, a few if preempted.
  auto precise = Probe();
  auto coarse = Probe({{"BOOSTER_CLOCK", "coarse"}});
  int p_tv = 0, p_ts = 0, c_tv = 0, c_ts = 0;
  ASSERT_EQ(sscanf(precise->Ask("ticks").c_str(), "ticks %d %d", &p_tv, &p_ts), 2);
  ASSERT_EQ(sscanf(coarse->Ask("ticks").c_str(), "ticks %d %d", &c_tv, &c_ts), 2);
  EXPECT_GT(p_tv, 20);
  EXPECT_GT(p_ts, 20);
  EXPECT_LT(c_tv, 10);
  EXPECT_LT(c_ts, 10);
}

TEST_F(InterposeTest, NumaBindAppliesToMainAndNewThreads) {
  auto probe = Probe({{"BOOSTER_NUMA", "bind"},
                      {"BOOSTER_CPUS", std::to_string(AllowedCpus()[0])},
                      {"BOOSTER_DEBUG", "1"}});
  EXPECT_EQ(probe->Ask("mempolicy"),
            "mempolicy " + std::to_string(MPOL_BIND) + " " + std::to_string(MPOL_BIND));
  std::ifstream maps("/proc/" + std::to_string(probe->pid()) + "/numa_maps");
  std::string first;
  std::getline(maps, first);
  EXPECT_THAT(first, HasSubstr(" bind:")) << first;
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_EQ(probe->Stderr(), "");
}

TEST_F(InterposeTest, NumaPreferred) {
  auto probe = Probe({{"BOOSTER_NUMA", "preferred"}});
  std::string answer = probe->Ask("mempolicy");
  // MPOL_PREFERRED_MANY on kernels >= 5.15, MPOL_PREFERRED before.
  EXPECT_TRUE(answer == "mempolicy 5 5" || answer == "mempolicy 1 1") << answer;
}

TEST_F(InterposeTest, BadValuesFailOpenWithOneLineEachUnderDebug) {
  std::map<std::string, std::string> env = {
      {"BOOSTER_LISTEN_BACKLOG", "many"}, {"BOOSTER_CPUS", "0-"}, {"BOOSTER_TCP_NODELAY", "1"}};
  auto quiet = Probe(env);
  env["BOOSTER_DEBUG"] = "1";
  auto loud = Probe(env);
  for (auto* probe : {quiet.get(), loud.get()}) {
    auto [port, fd] = Listen(*probe, 5);
    EXPECT_EQ(ListenBacklog(port), 5);  // the bad knob is off...
    probe->Ask("connect " + std::to_string(port));
    EXPECT_EQ(Fields(probe->Ask("accept " + std::to_string(fd)))["nodelay"], 1);  // ...not others
    for (pid_t tid : Threads(*probe, 2)) {
      EXPECT_EQ(ThreadCpuList(probe->pid(), tid), AllowedCpus());
    }
    EXPECT_EQ(probe->CloseAndWait(), 0);
  }
  EXPECT_EQ(quiet->Stderr(), "");
  std::string err = loud->Stderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
  EXPECT_THAT(err, HasSubstr("BOOSTER_LISTEN_BACKLOG=many"));
  EXPECT_THAT(err, HasSubstr("BOOSTER_CPUS=0-"));
}

TEST_F(InterposeTest, ForkedChildrenTakeTheNextCpuAndExecKeepsTheConfiguration) {
  std::vector<int> allowed = AllowedCpus();
  auto probe = Probe({{"BOOSTER_THREADS", "pin"}, {"BOOSTER_LISTEN_BACKLOG", "700"}});
  std::string main_cpu = probe->Ask("affinity").substr(strlen("affinity "));
  pid_t child = 0;
  ASSERT_EQ(sscanf(probe->Ask("fork").c_str(), "forked %d", &child), 1);
  // The child starts with the parent's affinity and pins itself to the next CPU in its
  // atfork handler, which may run after the parent answered.
  EXPECT_TRUE(WaitFor([&] {
    std::vector<int> child_cpus = ParseList(ThreadCpus(child)[child]);
    return child_cpus.size() == 1 &&
           (allowed.size() == 1 || std::to_string(child_cpus[0]) != main_cpu);
  })) << "child on "
      << ThreadCpus(child)[child] << ", parent on " << main_cpu;
  // exec: the new image loads the library again from the inherited environment.
  ASSERT_TRUE(probe->Send("exec"));
  EXPECT_EQ(ListenBacklog(Listen(*probe, 5).first), 700);
  for (pid_t tid : Threads(*probe, 2)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid).size(), 1u);
  }
  EXPECT_EQ(probe->CloseAndWait(), 0);
}

TEST_F(InterposeTest, ExportsOnlyTheInterposersAndNeedsNoCxxRuntime) {
  std::istringstream symbols(testing::RunCapture("nm -D --defined-only " + testing::LibPath()));
  std::set<std::string> exported;
  std::string line;
  while (std::getline(symbols, line)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name && (type == "T" || type == "W")) exported.insert(name);
  }
  EXPECT_EQ(exported,
            (std::set<std::string>{"accept", "accept4", "clock_getres", "clock_gettime", "connect",
                                   "gettimeofday", "listen", "pthread_create"}));
  // The instrumented copy (sanitizer build) needs the sanitizer runtimes and what they
  // pull in; the library users load is checked by the uninstrumented run.
  if (getenv("BOOSTER_PRELOAD_PREFIX") != nullptr) return;
  std::istringstream dynamic(testing::RunCapture("readelf -d " + testing::LibPath()));
  int needed = 0;
  while (std::getline(dynamic, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    EXPECT_THAT(line, HasSubstr("[libc.so.6]")) << "only libc is needed";
  }
  EXPECT_EQ(needed, 1);
}

class ControlPageTest : public InterposeTest {
 protected:
  TempDir dir_;
  std::string path_ = dir_.path() + "/control";

  static booster_control Page(uint64_t features) {
    booster_control page;
    booster_control_init(&page);
    page.features = features;
    return page;
  }
};

TEST_F(ControlPageTest, FeaturesSwitchOnAndOffWhileTheProcessRuns) {
  ControlFile control(path_);
  auto probe = Probe({{"BOOSTER_CONTROL", path_}, {"BOOSTER_DEBUG", "1"}});
  auto [port, fd] = Listen(*probe, 5);
  EXPECT_EQ(ListenBacklog(port), 5);

  // On: the socket already listening is re-listened at the next interposed call.
  booster_control page = Page(BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_TCP_NODELAY |
                              BOOSTER_FEATURE_COARSE_CLOCK | BOOSTER_FEATURE_THREAD_PLACEMENT);
  page.listen_backlog = 3000;
  page.thread_mode = BOOSTER_THREADS_PIN;
  page.cpu_count = 1;
  page.cpus[0] = static_cast<uint16_t>(AllowedCpus().back());
  control.Publish(page);
  std::string clock = probe->Ask("clock");
  EXPECT_NE(clock, "clock 1 1 0") << "coarse clocks are on";
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(port) == 3000; }));
  probe->Ask("connect " + std::to_string(port));
  EXPECT_EQ(Fields(probe->Ask("accept " + std::to_string(fd)))["nodelay"], 1);
  for (pid_t tid : Threads(*probe, 2)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid), std::vector<int>{page.cpus[0]});
  }

  // Off again: the original backlog comes back, new sockets and threads are untouched.
  control.Publish(Page(0));
  EXPECT_EQ(probe->Ask("clock"), "clock 1 1 0");
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(port) == 5; }));
  probe->Ask("connect " + std::to_string(port));
  EXPECT_EQ(Fields(probe->Ask("accept " + std::to_string(fd)))["nodelay"], 0);
  for (pid_t tid : Threads(*probe, 2)) {
    EXPECT_EQ(ThreadCpuList(probe->pid(), tid), AllowedCpus());
  }
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_EQ(probe->Stderr(), "");
}

TEST_F(ControlPageTest, AcceptPicksUpAChangeMadeWhileItWasBlocked) {
  ControlFile control(path_);
  auto probe = Probe({{"BOOSTER_CONTROL", path_}});
  auto [port, fd] = Listen(*probe, 5);
  ASSERT_TRUE(probe->Send("accept " + std::to_string(fd)));  // blocks in accept()
  booster_control page = Page(BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_TCP_NODELAY);
  page.listen_backlog = 2048;
  control.Publish(page);
  int client = testing::ConnectLoopback(port);
  ASSERT_GE(client, 0);
  auto accepted = Fields(probe->ReadLine().value_or(""));
  EXPECT_EQ(accepted["nodelay"], 1);
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(port) == 2048; }));
  close(client);
}

TEST_F(ControlPageTest, ZeroPageLeavesTheEnvironmentInForceUntilTheAgentWrites) {
  ControlFile control(path_);
  auto probe = Probe({{"BOOSTER_CONTROL", path_}, {"BOOSTER_LISTEN_BACKLOG", "900"}});
  auto [port, fd] = Listen(*probe, 5);
  EXPECT_EQ(ListenBacklog(port), 900);
  control.Publish(Page(0));  // the agent says: nothing
  probe->Ask("clock");
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(port) == 5; }));
}

TEST_F(ControlPageTest, ControlFileCreatedAfterStartIsPickedUp) {
  ControlFile control(path_, /*create=*/false);
  auto probe = Probe({{"BOOSTER_CONTROL", path_}, {"BOOSTER_DEBUG", "1"}});
  auto [port, fd] = Listen(*probe, 5);
  EXPECT_EQ(ListenBacklog(port), 5);
  control.Create();
  booster_control page = Page(BOOSTER_FEATURE_LISTEN_BACKLOG);
  page.listen_backlog = 1500;
  control.Publish(page);
  // The library retries the mapping at most once a second, on listen/connect/threads.
  EXPECT_TRUE(WaitFor([&] {
    probe->Ask("threads 1");
    return ListenBacklog(port) == 1500;
  }));
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_THAT(probe->Stderr(), HasSubstr("BOOSTER_CONTROL cannot be mapped yet"));
}

TEST_F(ControlPageTest, ForeignPageFallsBackToTheEnvironment) {
  ControlFile control(path_);
  booster_control page = Page(BOOSTER_FEATURE_LISTEN_BACKLOG);
  page.listen_backlog = 1500;
  page.version = 99;
  control.Publish(page);
  auto probe = Probe(
      {{"BOOSTER_CONTROL", path_}, {"BOOSTER_DEBUG", "1"}, {"BOOSTER_LISTEN_BACKLOG", "600"}});
  EXPECT_EQ(ListenBacklog(Listen(*probe, 5).first), 600);
  EXPECT_EQ(probe->CloseAndWait(), 0);
  EXPECT_THAT(probe->Stderr(), HasSubstr("foreign magic or version"));
}

TEST_F(ControlPageTest, ManyGenerationsUnderLoadNeverBreakTheProcess) {
  ControlFile control(path_);
  auto probe = Probe({{"BOOSTER_CONTROL", path_}});
  auto [port, fd] = Listen(*probe, 5);
  for (int i = 0; i < 200; ++i) {
    booster_control page = Page(i % 2 ? BOOSTER_FEATURE_LISTEN_BACKLOG : 0);
    page.listen_backlog = 100 + i;
    control.Publish(page);
    ASSERT_THAT(probe->Ask("clock"), StartsWith("clock "));
  }
  // Last publish (i = 199) has the floor on at 299.
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(port) == 299; }));
  EXPECT_EQ(probe->CloseAndWait(), 0);
}

}  // namespace
}  // namespace booster::runtime
