#include "sidecar/sample/preload_presence.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace booster::agent {
namespace {

constexpr FileId kLib{0xfd, 0x1, 5678};

TEST(ParsePreloadPresenceTest, ReadsTheLibrarysLocksOfEachProcess) {
  const char* text =
      "1: POSIX  ADVISORY  READ 100 fd:01:5678 0 0\n"     // loaded, not Go
      "2: POSIX  ADVISORY  READ 200 fd:01:5678 0 1\n"     // loaded and Go (merged range)
      "3: POSIX  ADVISORY  READ 300 fd:01:9999 0 1\n"     // another file
      "4: FLOCK  ADVISORY  READ 400 fd:01:5678 0 EOF\n"   // another kind of lock
      "5: POSIX  ADVISORY  WRITE 500 fd:01:5678 0 0\n"    // a write lock is not ours
      "6: OFDLCK ADVISORY  READ -1 fd:01:5678 0 0\n"      // no owner pid
      "7: POSIX  ADVISORY  READ 700 fd:01:5678 1 1\n"     // Go byte alone
      "7: -> POSIX  ADVISORY  READ 800 fd:01:5678 0 0\n"  // a blocked waiter
      "garbage\n"
      "8: POSIX  ADVISORY  READ x fd:01:5678 0 0\n"
      "9: POSIX  ADVISORY  READ 900 fd:zz:5678 0 0\n";
  PresenceByPid p = ParsePreloadPresence(text, kLib);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(p[100].loaded);
  EXPECT_FALSE(p[100].go);
  EXPECT_TRUE(p[200].loaded);
  EXPECT_TRUE(p[200].go);
  EXPECT_FALSE(p[700].loaded);
  EXPECT_TRUE(p[700].go);
  EXPECT_TRUE(ParsePreloadPresence("", kLib).empty());
}

// The real kernel: a child takes the locks libbooster.so takes; the parent (another
// process, as the agent is) sees them in /proc/locks with the child's pid.
TEST(ReadPreloadPresenceTest, SeesAnotherProcesssLocksThroughProcLocks) {
  char path[] = "/tmp/presence_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "xx", 2), 2);
  close(fd);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int f = open(path, O_RDONLY);
    struct flock l {};
    l.l_type = F_RDLCK;
    l.l_whence = SEEK_SET;
    l.l_start = kPresenceLoadedByte;
    l.l_len = 1;
    if (f < 0 || fcntl(f, F_SETLK, &l) != 0) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  absl::StatusOr<PresenceByPid> p = ReadPreloadPresence(path);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  unlink(path);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->count(child), 1u);
  EXPECT_TRUE(p->at(child).loaded);
  EXPECT_FALSE(p->at(child).go);
  EXPECT_EQ(ReadPreloadPresence("/nonexistent/libbooster.so").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace booster::agent
