// The sweep: libbooster.so answers exactly like libc for every argument libc accepts.
// Every case of booster_libc_cases (libc_equivalence_cases.cc: NULL pointers, bad and
// closed descriptors, non-sockets, bad clock ids, thread attributes with their own
// cpuset, fork and exec, 300 threads at once) runs in a fresh process without the library,
// then under it dormant and with every feature on, and each run must print the same line:
// return value, errno and the state the caller relies on. A case that crashes or hangs
// under any configuration is a failure that names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "booster/control.h"
#include "runtime/test_support.h"

namespace booster::runtime {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;

// The interposers libbooster.so exports (runtime/libbooster.map), each a case prefix;
// "fork" groups fork, vfork, posix_spawn and exec, which no interposer covers alone.
const char* const kInterposers[] = {"listen",       "accept",         "accept4",
                                    "connect",      "pthread_create", "clock_gettime",
                                    "clock_getres", "gettimeofday"};
const char* const kGroups[] = {"listen",       "accept",         "accept4",
                               "connect",      "pthread_create", "clock_gettime",
                               "clock_getres", "gettimeofday",   "fork"};

std::string CasesPath() {
  const char* p = getenv("BOOSTER_LIBC_CASES");
  return p != nullptr ? p : "";
}

std::string CpuList() {
  std::string list;
  for (int cpu : testing::AllowedCpus()) list += (list.empty() ? "" : ",") + std::to_string(cpu);
  return list;
}

// One way of running a case: without the library (libc), or under it with `env`.
struct Config {
  std::string name;
  bool preload = true;
  std::map<std::string, std::string> env;
};

// Every feature on, from the environment; placement in `threads` mode.
Config AllOn(const std::string& threads) {
  return Config{.name = "every feature on, threads " + threads,
                .env = {{"BOOSTER_LISTEN_BACKLOG", "4096"},
                        {"BOOSTER_TCP_NODELAY", "1"},
                        {"BOOSTER_TCP_QUICKACK", "1"},
                        {"BOOSTER_BUSY_POLL", "50"},
                        {"BOOSTER_RCVBUF", "256K"},
                        {"BOOSTER_SNDBUF", "256K"},
                        {"BOOSTER_CLOCK", "coarse"},
                        {"BOOSTER_THREADS", threads},
                        {"BOOSTER_CPUS", CpuList()},
                        {"BOOSTER_NUMA", "preferred"},
                        {"BOOSTER_DEBUG", "1"}}};
}

// What a case printed, or why it printed nothing usable ("" when it ran to the end).
struct Outcome {
  std::string line;
  std::string failure;
};

// "killed by signal 11 (SEGV)", "exit status 3": how a case process ended badly.
std::string BadEnd(int status) {
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           sigabbrev_np(WTERMSIG(status)) + ")";
  }
  return "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status);
}

Outcome RunCase(const std::string& name, const Config& config,
                std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::map<std::string, std::string> env = config.env;
  if (config.preload) env["LD_PRELOAD"] = testing::PreloadValue();
  Subprocess child(Subprocess::Options{.argv = {CasesPath(), name, CpuList()}, .env = env});
  std::string where = name + " (" + config.name + "): ";
  if (!child.started()) return {"", where + "did not start"};
  std::optional<std::string> line = child.ReadLine(timeout);
  // Without an answer, the process either died already or hangs (then ~Subprocess kills it).
  int status = child.CloseAndWait(line ? timeout : std::chrono::milliseconds(200));
  if (status == -1) {
    return {"", where +
                    (line ? "answered but did not exit"
                          : "no answer within " + std::to_string(timeout.count()) + " ms") +
                    " (hung)"};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return {"", where + BadEnd(status) + (line ? " after answering" : "") +
                    "; stderr: " + child.Stderr()};
  }
  if (!line) return {"", where + "exited without answering"};
  return {*line, ""};
}

std::vector<std::string> CaseNames() {
  std::istringstream lines(testing::RunCapture(CasesPath() + " --list"));
  std::vector<std::string> names;
  std::string line;
  while (std::getline(lines, line)) names.push_back(line);
  return names;
}

std::vector<std::string> CasesOf(const std::string& group) {
  std::vector<std::string> out;
  for (const std::string& name : CaseNames()) {
    if (name.rfind(group + "/", 0) == 0) out.push_back(name);
  }
  return out;
}

// A control page with every feature on, as the agent would publish it (the file lives as
// long as the test binary).
const std::string& AllOnControlPage() {
  static testing::TempDir dir;
  static std::string path = dir.path() + "/control";
  static testing::ControlFile control(path);
  static bool published = [] {
    booster_control page;
    booster_control_init(&page);
    page.features = BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_TCP_NODELAY |
                    BOOSTER_FEATURE_TCP_QUICKACK | BOOSTER_FEATURE_BUSY_POLL |
                    BOOSTER_FEATURE_SOCKET_BUFFERS | BOOSTER_FEATURE_THREAD_PLACEMENT |
                    BOOSTER_FEATURE_NUMA_MEMPOLICY | BOOSTER_FEATURE_COARSE_CLOCK;
    page.listen_backlog = 4096;
    page.busy_poll_us = 50;
    page.rcvbuf_bytes = 256 * 1024;
    page.sndbuf_bytes = 256 * 1024;
    page.thread_mode = BOOSTER_THREADS_PIN;
    page.numa_mode = BOOSTER_NUMA_PREFERRED;
    for (int cpu : testing::AllowedCpus()) {
      if (page.cpu_count < BOOSTER_CONTROL_MAX_CPUS) {
        page.cpus[page.cpu_count++] = static_cast<uint16_t>(cpu);
      }
    }
    control.Publish(page);
    return true;
  }();
  (void)published;
  return path;
}

const Config kLibc{.name = "libc, no library", .preload = false};

// Every feature on, from the environment (pin, confine) and from a control page (pin).
std::vector<Config> AllOnConfigs() {
  return {AllOn("pin"), AllOn("confine"),
          Config{.name = "every feature on from a control page, threads pin",
                 .env = {{"BOOSTER_CONTROL", AllOnControlPage()}, {"BOOSTER_DEBUG", "1"}}}};
}

class LibcEquivalenceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::LibPath().empty()) << "BOOSTER_LIB not set";
    ASSERT_FALSE(CasesPath().empty()) << "BOOSTER_LIBC_CASES not set";
  }
};

TEST_P(LibcEquivalenceTest, EveryCaseAnswersAsLibcDoes) {
  std::vector<std::string> cases = CasesOf(GetParam());
  ASSERT_FALSE(cases.empty()) << "no case for " << GetParam();
  std::vector<Config> configs = AllOnConfigs();
  configs.insert(configs.begin(), Config{.name = "dormant"});
  for (const std::string& name : cases) {
    Outcome expected = RunCase(name, kLibc);
    EXPECT_EQ(expected.failure, "");
    if (!expected.failure.empty()) continue;
    for (const Config& config : configs) {
      Outcome actual = RunCase(name, config);
      EXPECT_EQ(actual.failure, "");
      if (actual.failure.empty()) {
        EXPECT_EQ(actual.line, expected.line) << name << " (" << config.name << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, LibcEquivalenceTest, ::testing::ValuesIn(kGroups),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param);
                         });

// A new interposer cannot be exported without cases of its own in the sweep.
TEST(LibcEquivalenceSweepTest, CoversEveryExportedInterposer) {
  ASSERT_FALSE(CasesPath().empty()) << "BOOSTER_LIBC_CASES not set";
  std::istringstream symbols(testing::RunCapture("nm -D --defined-only " + testing::LibPath()));
  std::set<std::string> exported;
  std::string line;
  while (std::getline(symbols, line)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name && (type == "T" || type == "W")) exported.insert(name);
  }
  EXPECT_EQ(exported, std::set<std::string>(std::begin(kInterposers), std::end(kInterposers)));
  std::set<std::string> groups(std::begin(kGroups), std::end(kGroups));
  for (const std::string& name : CaseNames()) {
    std::string prefix = name.substr(0, name.find('/'));
    EXPECT_TRUE(groups.count(prefix) == 1 || prefix == "witness" || prefix == "harness")
        << name << " is never run";
  }
  for (const char* interposer : kInterposers) {
    EXPECT_GE(CasesOf(interposer).size(), 4u) << interposer;
  }
}

// The sweep proves something only if the features were really on: each all-on
// configuration changes what it should (coarse clock resolution, TCP_NODELAY on an
// accepted socket, one CPU per new thread in pin mode), and dormant changes nothing.
TEST(LibcEquivalenceSweepTest, EveryFeatureIsReallyOnInTheSweep) {
  ASSERT_FALSE(CasesPath().empty()) << "BOOSTER_LIBC_CASES not set";
  Outcome libc = RunCase("witness/features", kLibc);
  ASSERT_EQ(libc.failure, "");
  EXPECT_THAT(libc.line, HasSubstr("monotonic_res_ns=1 nodelay=0"));
  Outcome dormant = RunCase("witness/features", Config{.name = "dormant"});
  EXPECT_EQ(dormant.failure, "");
  EXPECT_EQ(dormant.line, libc.line);
  size_t cpus = testing::AllowedCpus().size();
  for (const Config& config : AllOnConfigs()) {
    Outcome on = RunCase("witness/features", config);
    EXPECT_EQ(on.failure, "");
    std::map<std::string, long> seen = testing::Fields(on.line);
    EXPECT_GT(seen["monotonic_res_ns"], 1) << config.name << ": " << on.line;
    EXPECT_EQ(seen["nodelay"], 1) << config.name << ": " << on.line;
    bool pin = config.name.find("confine") == std::string::npos;
    EXPECT_EQ(seen["thread_cpus"], pin ? 1 : static_cast<long>(cpus))
        << config.name << ": " << on.line;
  }
}

// The harness itself: a case that crashes or hangs is a failure that names it.
TEST(LibcEquivalenceSweepTest, ACrashOrAHangIsAFailureNamingTheCase) {
  ASSERT_FALSE(CasesPath().empty()) << "BOOSTER_LIBC_CASES not set";
  Outcome crash = RunCase("harness/crash", kLibc);
  EXPECT_THAT(crash.failure, HasSubstr("harness/crash (libc, no library): killed by signal " +
                                       std::to_string(SIGSEGV) + " (SEGV)"));
  Outcome hang = RunCase("harness/hang", kLibc, std::chrono::milliseconds(500));
  EXPECT_THAT(hang.failure, HasSubstr("harness/hang (libc, no library): no answer within 500 ms"));
}

}  // namespace
}  // namespace booster::runtime
