#include "common/crash_hook.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace booster {
namespace {

// Runs CrashHere(env, point) in a child; returns the child's wait status.
int RunChild(const char* env, const char* point) {
  pid_t pid = fork();
  if (pid == 0) {
    common::CrashHere(env, point);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

class CrashHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/crash_hook_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    marker_ = dir_ + "/crashed";
  }
  void TearDown() override {
    unsetenv("BOOSTER_TEST_CRASH_AT");
    unlink(marker_.c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
  std::string marker_;
};

TEST_F(CrashHookTest, KillsOnceAtItsPointThenNeverAgain) {
  setenv("BOOSTER_TEST_CRASH_AT", ("revert:" + marker_).c_str(), 1);
  int first = RunChild("BOOSTER_TEST_CRASH_AT", "revert");
  ASSERT_TRUE(WIFSIGNALED(first));
  EXPECT_EQ(WTERMSIG(first), SIGKILL);
  EXPECT_EQ(access(marker_.c_str(), F_OK), 0) << "the marker records that it happened";
  int second = RunChild("BOOSTER_TEST_CRASH_AT", "revert");
  ASSERT_TRUE(WIFEXITED(second));
  EXPECT_EQ(WEXITSTATUS(second), 0);
}

TEST_F(CrashHookTest, OtherPointsAndAnUnsetVariableDoNothing) {
  EXPECT_TRUE(WIFEXITED(RunChild("BOOSTER_TEST_CRASH_AT", "revert")));
  setenv("BOOSTER_TEST_CRASH_AT", ("journal-append:" + marker_).c_str(), 1);
  int other = RunChild("BOOSTER_TEST_CRASH_AT", "revert");
  ASSERT_TRUE(WIFEXITED(other));
  EXPECT_EQ(WEXITSTATUS(other), 0);
  EXPECT_NE(access(marker_.c_str(), F_OK), 0);
  setenv("BOOSTER_TEST_CRASH_AT", "no-colon", 1);
  EXPECT_TRUE(WIFEXITED(RunChild("BOOSTER_TEST_CRASH_AT", "no-colon")));
}

}  // namespace
}  // namespace booster
