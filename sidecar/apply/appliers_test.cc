// Appliers against the real kernel: affinity of a real multi-threaded child process and
// the control page. Sysctls are exercised in a network namespace by
// agent_integration_test.
#include "sidecar/apply/appliers.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/booster-appliers-XXXXXX";
  return mkdtemp(tmpl);
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

std::vector<int> Threads(int pid) {
  std::vector<int> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(std::atoi(e->d_name));
    }
    closedir(d);
  }
  return out;
}

void* Sleeper(void*) {
  pause();
  return nullptr;
}

// A child with three threads; the pipe says when they exist.
pid_t StartChild(int threads) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    for (int i = 0; i < threads - 1; ++i) {
      pthread_t t;
      pthread_create(&t, nullptr, Sleeper, nullptr);
    }
    char c = 'x';
    (void)!write(p[1], &c, 1);
    while (true) pause();
  }
  close(p[1]);
  char c;
  (void)!read(p[0], &c, 1);
  close(p[0]);
  return pid;
}

class AppliersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    original_ = Affinity(0);
    if (original_.size() < 2) GTEST_SKIP() << "machine: needs two CPUs";
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
  std::vector<int> original_;
  pid_t child_ = -1;
};

TEST_F(AppliersTest, AffinityOfEveryThreadIsSetAndRestored) {
  child_ = StartChild(3);
  ASSERT_GT(child_, 0);
  ASSERT_EQ(Threads(child_).size(), 3u);
  // Give one thread a distinct mask so "restored exactly" is per thread.
  int odd = Threads(child_)[1];
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(original_[1], &one);
  ASSERT_EQ(sched_setaffinity(odd, sizeof(one), &one), 0);

  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  ASSERT_TRUE(j.ok());
  Appliers a(&*j);
  ASSERT_TRUE(a.SetAffinity({child_}, {original_[0]}).ok());
  for (int tid : Threads(child_)) EXPECT_THAT(Affinity(tid), ElementsAre(original_[0])) << tid;

  // A fresh agent (new Journal object from the same file) reverts.
  absl::StatusOr<Journal> j2 = Journal::Open(dir_ + "/agent.journal");
  ASSERT_TRUE(j2.ok());
  EXPECT_EQ(j2->entries().size(), 4u);  // the process + three threads
  Appliers b(&*j2);
  std::vector<std::string> log;
  ASSERT_TRUE(b.RevertAll(&log).ok());
  for (int tid : Threads(child_)) {
    if (tid == odd) {
      EXPECT_THAT(Affinity(tid), ElementsAre(original_[1]));
    } else {
      EXPECT_EQ(Affinity(tid), original_) << tid;
    }
  }
  EXPECT_TRUE(Journal::Open(dir_ + "/agent.journal")->empty());
}

// pinned: every thread on exactly one CPU, spread over the CPUs round-robin (fewest
// threads first); a second pass touches only threads it has not seen; revert restores.
TEST_F(AppliersTest, PinnedPutsEachThreadOnOneCpuAndRescansOnlyNewThreads) {
  child_ = StartChild(4);
  ASSERT_GT(child_, 0);
  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  ASSERT_TRUE(j.ok());
  Appliers a(&*j);
  ThreadPlacementState state;
  state.pid = child_;
  const std::vector<int> order = {original_[1], original_[0]};
  absl::StatusOr<PlaceThreadsResult> r = a.PlaceThreads(order, /*pin=*/true, &state);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->denied.ok());
  EXPECT_EQ(r->changed + r->already, 4);
  std::map<int, int> per_cpu;
  for (int tid : Threads(child_)) {
    std::vector<int> mask = Affinity(tid);
    ASSERT_EQ(mask.size(), 1u) << "thread " << tid << " is not pinned";
    ++per_cpu[mask[0]];
  }
  EXPECT_EQ(per_cpu[original_[1]], 2);
  EXPECT_EQ(per_cpu[original_[0]], 2);
  // Nothing new: nothing looked at again, nothing journaled.
  size_t journaled = Journal::Open(dir_ + "/agent.journal")->entries().size();
  r = a.PlaceThreads(order, true, &state);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->changed + r->already, 0);
  EXPECT_EQ(Journal::Open(dir_ + "/agent.journal")->entries().size(), journaled);
  std::vector<std::string> log;
  ASSERT_TRUE(a.RevertAll(&log).ok());
  for (int tid : Threads(child_)) EXPECT_EQ(Affinity(tid), original_) << tid;
}

// spread / whole-cores: every thread confined to the whole set; a thread already confined
// so (as libbooster.so places the threads it starts) is left alone and not journaled.
TEST_F(AppliersTest, ConfineLeavesThreadsAlreadyPlacedAlone) {
  child_ = StartChild(3);
  ASSERT_GT(child_, 0);
  int placed = Threads(child_)[2];
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(original_[0], &one);
  ASSERT_EQ(sched_setaffinity(placed, sizeof(one), &one), 0);
  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  ASSERT_TRUE(j.ok());
  Appliers a(&*j);
  ThreadPlacementState state;
  state.pid = child_;
  absl::StatusOr<PlaceThreadsResult> r = a.PlaceThreads({original_[0]}, false, &state);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->changed, 2);
  EXPECT_EQ(r->already, 1);
  for (int tid : Threads(child_)) EXPECT_THAT(Affinity(tid), ElementsAre(original_[0])) << tid;
  EXPECT_EQ(j->entries().size(), 3u);  // the process and the two threads changed
}

// Another user's process (without CAP_SYS_NICE): refused, nothing journaled.
TEST_F(AppliersTest, ARefusedProcessLeavesNoJournal) {
  if (geteuid() != 0) GTEST_SKIP() << "machine: needs root to start a process as another user";
  chmod(dir_.c_str(), 0777);  // the unprivileged agent below writes its journal there
  child_ = fork();
  if (child_ == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    while (true) pause();
  }
  ASSERT_GT(child_, 0);
  // The agent side: an unprivileged process of a third user.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t agent = fork();
  if (agent == 0) {
    close(p[0]);
    if (setgid(65533) != 0 || setuid(65533) != 0) _exit(2);
    usleep(100000);  // the child has switched user by now
    absl::StatusOr<Journal> j = Journal::Open(dir_ + "/refused.journal");
    if (!j.ok()) _exit(3);
    Appliers a(&*j);
    ThreadPlacementState state;
    state.pid = child_;
    absl::StatusOr<PlaceThreadsResult> r = a.PlaceThreads({original_[0]}, false, &state);
    char verdict = !r.ok() ? 'e' : r->denied.ok() ? 'p' : j->empty() ? 'd' : 'j';
    (void)!write(p[1], &verdict, 1);
    _exit(0);
  }
  close(p[1]);
  char verdict = '?';
  (void)!read(p[0], &verdict, 1);
  close(p[0]);
  waitpid(agent, nullptr, 0);
  EXPECT_EQ(verdict, 'd') << "e: error, p: placed, j: refused but journaled";
}

TEST_F(AppliersTest, RevertSkipsProcessesThatExited) {
  child_ = StartChild(1);
  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  Appliers a(&*j);
  ASSERT_TRUE(a.SetAffinity({child_}, {original_[0]}).ok());
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
  child_ = -1;
  std::vector<std::string> log;
  EXPECT_TRUE(a.RevertAll(&log).ok());
  EXPECT_TRUE(j->empty());
  EXPECT_THAT(log.back(), HasSubstr("gone"));
}

TEST_F(AppliersTest, RefusesANodeWideSysctlBeforeTouchingAnything) {
  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  Appliers a(&*j);
  absl::Status s = a.SetSysctl("vm.swappiness", "1");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("not namespaced"));
  EXPECT_TRUE(j->empty());
}

TEST_F(AppliersTest, ControlPageIsPublishedInPlaceAndRestored) {
  std::string path = dir_ + "/control";
  // A page another agent published earlier.
  {
    absl::StatusOr<std::unique_ptr<ControlFile>> f = ControlFile::Open(path);
    ASSERT_TRUE(f.ok());
    booster_control page;
    booster_control_init(&page);
    page.features = BOOSTER_FEATURE_TCP_NODELAY;
    (*f)->Publish(page);
  }
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  EXPECT_EQ(before.st_size, static_cast<off_t>(BOOSTER_CONTROL_FILE_SIZE));
  // A reader mapping taken before the change sees the change: same inode.
  absl::StatusOr<std::unique_ptr<ControlFile>> reader = ControlFile::Open(path);
  ASSERT_TRUE(reader.ok());
  uint64_t gen0 = (*reader)->Read()->generation;

  absl::StatusOr<Journal> j = Journal::Open(dir_ + "/agent.journal");
  Appliers a(&*j);
  booster_control page;
  booster_control_init(&page);
  page.features = BOOSTER_FEATURE_LISTEN_BACKLOG | BOOSTER_FEATURE_THREAD_PLACEMENT;
  page.listen_backlog = 4096;
  page.cpu_count = 2;
  page.cpus[0] = 1;
  page.cpus[1] = 0;
  ASSERT_TRUE(a.PublishControl(path, page).ok());
  absl::StatusOr<booster_control> seen = (*reader)->Read();
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->features, page.features);
  EXPECT_EQ(seen->listen_backlog, 4096);
  EXPECT_EQ(seen->generation, gen0 + 2);
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);

  ASSERT_TRUE(a.RevertAll(nullptr).ok());
  seen = (*reader)->Read();
  EXPECT_EQ(seen->features, static_cast<uint64_t>(BOOSTER_FEATURE_TCP_NODELAY));
  EXPECT_EQ(seen->listen_backlog, 0);
  EXPECT_EQ(seen->generation, gen0 + 4);
}

TEST(ControlFileTest, HexRoundTrip) {
  booster_control page;
  booster_control_init(&page);
  page.busy_poll_us = 50;
  page.cpus[1023] = 7;
  absl::StatusOr<booster_control> back = ControlPageFromHex(ControlPageToHex(page));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::memcmp(&*back, &page, sizeof(page)), 0);
  EXPECT_FALSE(ControlPageFromHex("abcd").ok());
}

}  // namespace
}  // namespace booster::agent
