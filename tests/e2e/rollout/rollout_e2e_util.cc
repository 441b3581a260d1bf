#include "tests/e2e/rollout/rollout_e2e_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/e2e/e2e_util.h"

extern char** environ;

namespace booster::e2e {
namespace {

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

}  // namespace

absl::Status BuildImages() {
  std::string script = Env("BOOSTER_ROLLOUT_IMAGES");
  if (script.empty()) return absl::FailedPreconditionError("BOOSTER_ROLLOUT_IMAGES is not set");
  absl::StatusOr<std::string> out = RunCommand({script});
  return out.ok() ? absl::OkStatus() : out.status();
}

Json HttpServerTemplate(const std::string& app) {
  return Json::parse(absl::StrCat(R"({
    "metadata": {"labels": {"app": ")",
                                  app, R"("}},
    "spec": {
      "terminationGracePeriodSeconds": 1,
      "containers": [{
        "name": "web",
        "image": ")",
                                  kAppImage, R"(",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1},
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"},
                      "limits": {"cpu": "500m", "memory": "64Mi"}}
      }]
    }
  })"));
}

Json DeploymentObject(const std::string& ns, const std::string& name, int replicas,
                      const Json& tmpl) {
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", {{"app", name}}}}},
                {"template", tmpl}}}};
}

absl::Status ApplyJson(const Json& object) { return Apply(object.dump()); }

absl::StatusOr<Json> GetJson(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("-o");
  a.push_back("json");
  absl::StatusOr<std::string> out = Kubectl(a);
  if (!out.ok()) return out.status();
  Json j = Json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InternalError(absl::StrCat("not JSON: ", *out));
  return j;
}

absl::Status DeleteDeploymentAndWaitPodsGone(const std::string& ns, const std::string& name) {
  absl::StatusOr<std::string> deleted = Kubectl({"-n", ns, "delete", "deploy", name});
  if (!deleted.ok()) return deleted.status();
  return WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<std::string> pods =
            Kubectl({"-n", ns, "get", "pods", "-l", "app=" + name, "-o", "name"});
        if (!pods.ok() || !Trim(*pods).empty()) return absl::UnavailableError("pods left");
        return true;
      },
      absl::Minutes(1));
}

absl::Status WaitRolledOut(const std::string& ns, const std::string& name, absl::Duration timeout) {
  absl::StatusOr<std::string> r =
      Kubectl({"-n", ns, "rollout", "status", "deployment/" + name,
               absl::StrCat("--timeout=", absl::ToInt64Seconds(timeout), "s")});
  return r.ok() ? absl::OkStatus() : r.status();
}

absl::StatusOr<pid_t> ContainerPid(const std::string& ns, const std::string& pod,
                                   const std::string& container) {
  absl::StatusOr<Json> p = GetJson({"-n", ns, "get", "pod", pod});
  if (!p.ok()) return p.status();
  std::string id;
  for (const Json& cs : p->value("/status/containerStatuses"_json_pointer, Json::array())) {
    if (cs.value("name", "") == container) id = cs.value("containerID", "");
  }
  if (id.empty()) {
    return absl::UnavailableError(absl::StrCat("container ", container, " has no id yet"));
  }
  id = std::string(absl::StripPrefix(id, "containerd://"));
  std::string qos = absl::AsciiStrToLower(p->value("/status/qosClass"_json_pointer, ""));
  std::string uid = p->value("/metadata/uid"_json_pointer, "");
  std::string dir = "/sys/fs/cgroup/cpu/booster-e2e/kubepods/";
  if (qos != "guaranteed") dir += qos + "/";
  absl::StatusOr<std::string> procs =
      ReadFile(absl::StrCat(dir, "pod", uid, "/", id, "/cgroup.procs"));
  if (!procs.ok()) return procs.status();
  for (absl::string_view line : absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(line, &pid)) return pid;
  }
  return absl::UnavailableError(absl::StrCat("no process in the cgroup of ", container));
}

std::vector<ThreadView> Threads(pid_t pid) {
  std::vector<ThreadView> out;
  absl::StatusOr<std::string> tasks = RunCommand({"ls", absl::StrCat("/proc/", pid, "/task")});
  if (!tasks.ok()) return out;
  for (absl::string_view t : absl::StrSplit(*tasks, '\n', absl::SkipEmpty())) {
    ThreadView v;
    if (!absl::SimpleAtoi(t, &v.tid)) continue;
    const std::string dir = absl::StrCat("/proc/", pid, "/task/", v.tid);
    absl::StatusOr<std::string> status = ReadFile(dir + "/status");
    if (!status.ok()) continue;
    for (absl::string_view line : absl::StrSplit(*status, '\n')) {
      if (absl::ConsumePrefix(&line, "Cpus_allowed_list:")) v.cpus = Trim(line);
      if (absl::ConsumePrefix(&line, "NSpid:")) {
        std::vector<std::string> ids = absl::StrSplit(Trim(line), '\t', absl::SkipEmpty());
        if (ids.empty() || !absl::SimpleAtoi(Trim(ids.back()), &v.pod_tid)) v.pod_tid = 0;
      }
    }
    absl::StatusOr<std::string> maps = ReadFile(dir + "/numa_maps");
    if (maps.ok()) {
      std::vector<std::string> words = absl::StrSplit(maps->substr(0, maps->find('\n')), ' ');
      if (words.size() > 1) v.policy = words[1];
      // MPOL_PREFERRED_MANY reads "prefer (many):0".
      if (words.size() > 2 && absl::StartsWith(words[2], "(")) {
        v.policy = absl::StrCat(words[1], " ", words[2]);
      }
    }
    out.push_back(v);
  }
  return out;
}

std::string Describe(const std::vector<ThreadView>& threads) {
  std::vector<std::string> parts;
  for (const ThreadView& t : threads) {
    parts.push_back(absl::StrCat(t.tid, ":", t.cpus, "/", t.policy));
  }
  return absl::StrJoin(parts, " ");
}

std::string Diagnose(const std::string& ns) {
  std::string out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-n", ns, "get", "boosterprofiles", "-o", "yaml"},
        std::vector<std::string>{"-n", ns, "get", "deployments,replicasets,pods", "-o", "wide"},
        std::vector<std::string>{"-n", ns, "get", "events", "--sort-by=.lastTimestamp"}}) {
    absl::StatusOr<std::string> r = Kubectl(args);
    absl::StrAppend(&out, "\n$ kubectl ", absl::StrJoin(args, " "), "\n",
                    r.ok() ? *r : std::string(r.status().message()));
  }
  return out;
}

OperatorProcess::OperatorProcess(std::string ns, std::vector<std::string> extra_flags)
    : ns_(std::move(ns)), extra_flags_(std::move(extra_flags)) {
  std::string dir = Env("BOOSTER_E2E_STATE", "/var/lib/booster-e2e") + "/logs/rollout-e2e";
  mkdir((Env("BOOSTER_E2E_STATE", "/var/lib/booster-e2e") + "/logs").c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  log_path_ = absl::StrCat(dir, "/operator-", ns_, ".log");
}

OperatorProcess::~OperatorProcess() {
  if (pid_ > 0) (void)Kill();
}

absl::Status OperatorProcess::Start(absl::Duration timeout) {
  if (pid_ > 0) return absl::FailedPreconditionError("the operator is already running");
  std::string bin = Env("BOOSTER_OPERATOR_BIN");
  if (bin.empty() || access(bin.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no booster-operator binary at BOOSTER_OPERATOR_BIN=\"", bin, "\""));
  }
  ++runs_;
  std::vector<std::string> args = {
      bin,
      "--kubeconfig=" + Env("KUBECONFIG", "/var/lib/booster-e2e/admin.kubeconfig"),
      "--namespace=" + ns_,
      "--leader-elect=true",
      "--leader-election-namespace=" + ns_,
      "--leader-election-id=booster-operator",
      absl::StrCat("--identity=e2e-", ns_, "-", runs_, "-", getpid()),
      absl::StrCat("--agent-image=", kAgentImage),
      "--agent-image-pull-policy=IfNotPresent",
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
      "--log-format=json"};
  args.insert(args.end(), extra_flags_.begin(), extra_flags_.end());
  if (gid_ != 0) {
    // setpriv execs the operator: the same pid, with only this group.
    args.insert(args.begin(), {"/usr/bin/setpriv", absl::StrCat("--regid=", gid_),
                               "--clear-groups", "--"});
  }

  // Where this run's lines start in the (appended) log.
  struct stat st {};
  off_t offset = stat(log_path_.c_str(), &st) == 0 ? st.st_size : 0;
  int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", log_path_));
  std::string banner = absl::StrCat("=== run ", runs_, ": ", absl::StrJoin(args, " "), "\n");
  (void)!write(fd, banner.data(), banner.size());
  offset += static_cast<off_t>(banner.size());

  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fd);
  if (rc != 0) return absl::InternalError(absl::StrCat("posix_spawn ", bin, ": ", rc));
  pid_ = pid;
  metrics_address_.clear();
  health_address_.clear();

  // The bound addresses, then a ready /readyz.
  return WaitFor(
      [&]() -> absl::StatusOr<bool> {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return absl::InternalError(absl::StrCat("booster-operator exited (status ", status,
                                                  ") during start-up; log: ", log_path_));
        }
        if (metrics_address_.empty() || health_address_.empty()) {
          std::ifstream in(log_path_);
          in.seekg(offset);
          std::string line;
          while (std::getline(in, line)) {
            Json j = Json::parse(line, nullptr, false);
            if (j.is_discarded() || !j.is_object() || j.value("msg", "") != "serving") continue;
            if (j.value("endpoint", "") == "metrics") metrics_address_ = j.value("address", "");
            if (j.value("endpoint", "") == "health") health_address_ = j.value("address", "");
          }
          if (metrics_address_.empty() || health_address_.empty()) {
            return absl::UnavailableError("the operator has not logged its addresses yet");
          }
        }
        absl::StatusOr<std::string> code =
            RunCommand({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                        absl::StrCat("http://", health_address_, "/readyz")});
        if (!code.ok() || Trim(*code) != "200") {
          return absl::UnavailableError(
              absl::StrCat("/readyz: ", code.ok() ? *code : std::string(code.status().message())));
        }
        return true;
      },
      timeout, absl::Milliseconds(200));
}

absl::Status OperatorProcess::Kill() {
  if (pid_ <= 0) return absl::FailedPreconditionError("the operator is not running");
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  std::ofstream(log_path_, std::ios::app) << "=== SIGKILL\n";
  return absl::OkStatus();
}

absl::StatusOr<int> OperatorProcess::Stop(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("the operator is not running");
  kill(pid_, SIGTERM);
  return WaitExit(timeout);
}

absl::StatusOr<int> OperatorProcess::WaitExit(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("the operator is not running");
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    usleep(50 * 1000);  // polling the child's exit, not synchronising on time
  }
  return absl::DeadlineExceededError(
      absl::StrCat("the operator did not exit within ", absl::FormatDuration(timeout)));
}

absl::StatusOr<std::string> OperatorProcess::Metrics() const {
  if (metrics_address_.empty()) return absl::FailedPreconditionError("no metrics address");
  return RunCommand({"curl", "-sS", "--fail", "--max-time", "5",
                     absl::StrCat("http://", metrics_address_, "/metrics")});
}

absl::StatusOr<double> OperatorProcess::Metric(absl::string_view series) const {
  absl::StatusOr<std::string> text = Metrics();
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    if (line.front() == '#' || !absl::StartsWith(line, series)) continue;
    size_t space = line.rfind(' ');
    double v = 0;
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) {
      return v;
    }
  }
  return absl::NotFoundError(absl::StrCat("no sample ", series));
}

std::string OperatorProcess::Logs() const {
  absl::StatusOr<std::string> text = ReadFile(log_path_);
  return text.ok() ? absl::StrCat("--- ", log_path_, "\n", *text)
                   : std::string(text.status().message());
}

}  // namespace booster::e2e
