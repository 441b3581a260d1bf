// Test helper: runs sidecar/testdata/metrics_server.py (a real HTTP application with a real
// Prometheus histogram, Python standard library only) as a child process and waits, by
// reading the line it prints, until it listens. Killed when the object goes.
//
//   TestAppServer app;
//   ASSERT_TRUE(app.Start(/*port=*/0));
//   HttpGet(absl::StrCat("http://127.0.0.1:", app.app_port(), "/"), absl::Seconds(2));
#ifndef BOOSTER_SIDECAR_TESTING_TEST_APP_SERVER_H_
#define BOOSTER_SIDECAR_TESTING_TEST_APP_SERVER_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace booster::agent {

class TestAppServer {
 public:
  TestAppServer() = default;
  TestAppServer(const TestAppServer&) = delete;
  TestAppServer& operator=(const TestAppServer&) = delete;
  ~TestAppServer() { Stop(); }

  // `in_child` runs in the forked child before exec (e.g. to join a cgroup and a network
  // namespace); a non-zero return makes the child exit with it. Returns false when the
  // server did not come up.
  bool Start(int port, const std::function<int()>& in_child = nullptr) {
    const char* dir = std::getenv("BOOSTER_AGENT_TESTDATA");
    std::string script =
        std::string(dir != nullptr ? dir : "sidecar/testdata") + "/metrics_server.py";
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      close(fds[0]);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[1]);
      if (in_child) {
        int rc = in_child();
        if (rc != 0) _exit(rc);
      }
      std::string p = std::to_string(port);
      execlp("python3", "python3", script.c_str(), p.c_str(), "300", nullptr);
      _exit(127);
    }
    close(fds[1]);
    FILE* out = fdopen(fds[0], "r");
    if (out == nullptr) return false;
    char line[128] = {0};
    bool got = std::fgets(line, sizeof(line), out) != nullptr;  // blocks until it listens
    std::fclose(out);
    if (!got) return false;
    std::vector<std::string> f = absl::StrSplit(absl::string_view(line), ' ');
    return f.size() == 3 && f[0] == "ports" && absl::SimpleAtoi(f[1], &app_port_) &&
           absl::SimpleAtoi(absl::StripAsciiWhitespace(f[2]), &other_port_);
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  pid_t pid() const { return pid_; }
  int app_port() const { return app_port_; }
  int other_port() const { return other_port_; }
  std::string url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", app_port_, path);
  }

 private:
  pid_t pid_ = -1;
  int app_port_ = 0;
  int other_port_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_TESTING_TEST_APP_SERVER_H_
