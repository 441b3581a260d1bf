#include "tests/e2e/e2e_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace booster::e2e {
namespace {

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                absl::string_view stdin_data) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Errno("pipe");
  Fd in_r(in[0]), in_w(in[1]);
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  Fd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  Fd err_r(err[0]), err_w(err[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  }
  in_r.Reset();
  out_w.Reset();
  err_w.Reset();

  // Feed stdin and drain stdout/stderr together so neither side can block the other.
  std::string output, errors;
  size_t written = 0;
  if (stdin_data.empty()) in_w.Reset();
  signal(SIGPIPE, SIG_IGN);
  char buf[65536];
  while (out_r.get() >= 0 || err_r.get() >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_w.get() >= 0) fds[n++] = {in_w.get(), POLLOUT, 0};
    if (out_r.get() >= 0) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.get() >= 0) fds[n++] = {err_r.get(), POLLIN, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      return Errno("poll");
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_w.get()) {
        ssize_t w = write(in_w.get(), stdin_data.data() + written, stdin_data.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == stdin_data.size()) in_w.Reset();
        continue;
      }
      Fd& fd = fds[i].fd == out_r.get() ? out_r : err_r;
      ssize_t r = read(fd.get(), buf, sizeof(buf));
      if (r > 0) {
        (&fd == &out_r ? output : errors).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        fd.Reset();
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Errno("waitpid");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return output;
  std::string how = WIFEXITED(status) ? absl::StrCat("exit code ", WEXITSTATUS(status))
                                      : absl::StrCat("signal ", WTERMSIG(status));
  return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "), "` failed (", how,
                                          "): ", errors, output.empty() ? "" : " stdout: ",
                                          output));
}

std::string ClusterDir() {
  const char* dir = std::getenv("BOOSTER_E2E_CLUSTER_DIR");
  return dir != nullptr ? dir : BOOSTER_E2E_CLUSTER_DIR_DEFAULT;
}

absl::StatusOr<std::string> Kubectl(const std::vector<std::string>& args,
                                    absl::string_view stdin_data) {
  std::vector<std::string> argv = {ClusterDir() + "/kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, stdin_data);
}

absl::Status Apply(absl::string_view yaml) {
  return Kubectl({"apply", "-f", "-"}, yaml).status();
}

absl::Status WaitFor(const std::function<absl::StatusOr<bool>()>& condition,
                     absl::Duration timeout, absl::Duration interval) {
  absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::UnavailableError("condition never evaluated");
  while (true) {
    absl::StatusOr<bool> done = condition();
    if (done.ok() && *done) return absl::OkStatus();
    if (!done.ok() && done.status().code() != absl::StatusCode::kUnavailable) {
      return done.status();
    }
    if (!done.ok()) last = done.status();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("not done after ", absl::FormatDuration(timeout),
                       done.ok() ? "" : absl::StrCat(": ", last.message())));
    }
    absl::SleepFor(interval);
  }
}

absl::StatusOr<std::string> HttpGet(const std::string& url) {
  return RunCommand({"curl", "-sS", "--fail", "--max-time", "30", url});
}

void CpuLoad::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CpuLoad::Run() {
  const absl::Time end = absl::Now() + absl::Minutes(10);
  while (!stop_ && absl::Now() < end) {
    if (HttpGet(url_).ok()) {
      ++answered_;
    } else {
      absl::SleepFor(absl::Milliseconds(200));  // not a hot loop of failing curls
    }
  }
}

std::string FastCpuHpaYaml(const std::string& ns, const std::string& name, int min_replicas,
                           int max_replicas) {
  return absl::StrCat(R"(
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: )", name, ", namespace: ", ns, R"(}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: )", name, R"(}
  minReplicas: )", min_replicas, R"(
  maxReplicas: )", max_replicas, R"(
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies: [{type: Percent, value: 200, periodSeconds: 5}]
    scaleDown:
      stabilizationWindowSeconds: 0
      policies: [{type: Percent, value: 100, periodSeconds: 5}]
)");
}

absl::StatusOr<HpaStatus> GetHpaStatus(const std::string& ns, const std::string& name) {
  absl::StatusOr<std::string> r =
      Kubectl({"-n", ns, "get", "hpa", name, "-o",
               "jsonpath={.status.currentReplicas} {.status.desiredReplicas} "
               "{.status.currentMetrics[0].resource.current.averageUtilization}"});
  if (!r.ok()) return r.status();
  std::vector<std::string> f =
      absl::StrSplit(absl::StripAsciiWhitespace(*r), ' ', absl::SkipEmpty());
  HpaStatus s;
  if (f.size() >= 2 && (!absl::SimpleAtoi(f[0], &s.current_replicas) ||
                        !absl::SimpleAtoi(f[1], &s.desired_replicas))) {
    return absl::InternalError(absl::StrCat("unexpected HPA status: ", *r));
  }
  if (f.size() == 3 && !absl::SimpleAtoi(f[2], &s.utilization)) {
    return absl::InternalError(absl::StrCat("unexpected HPA status: ", *r));
  }
  return s;
}

TestNamespace::TestNamespace(absl::string_view prefix) {
  std::random_device rd;
  name_ = absl::StrCat(prefix, "-", std::to_string(rd() % 1000000));
  status_ = Kubectl({"create", "namespace", name_}).status();
  if (status_.ok()) {
    // Pods need the namespace's default service account (ServiceAccount admission).
    status_ = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> sa = Kubectl({"-n", name_, "get", "serviceaccount",
                                                    "default", "-o", "name"});
          if (!sa.ok()) return absl::UnavailableError(sa.status().message());
          return true;
        },
        // The service-account controller can take a minute after an API server outage
        // (measured: 35-67 s after 30 s down) before it serves a new namespace.
        absl::Seconds(150));
  }
}

TestNamespace::~TestNamespace() {
  if (status_.ok()) (void)Kubectl({"delete", "namespace", name_, "--wait=false"});
}

StaticCpuManager::StaticCpuManager()
    : status_(RunCommand({ClusterDir() + "/cpu-manager", "static"}).status()) {}
StaticCpuManager::~StaticCpuManager() {
  (void)RunCommand({ClusterDir() + "/cpu-manager", "none"});
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace booster::e2e
