// Helpers of the rollout e2e suite (tests/e2e/rollout): the agent and app images, the
// HTTP workload's Deployment, reading a container's process on the node through the host
// PID namespace, and the booster-operator binary run as a host process against the admin
// kubeconfig (start, SIGKILL, restart, logs, metrics).
//
//   ASSERT_TRUE(BuildImages().ok());
//   OperatorProcess op(ns);
//   ASSERT_TRUE(op.Start().ok()) << op.Logs();
//   ... op.Kill(); op.Start(); ...
#ifndef BOOSTER_TESTS_E2E_ROLLOUT_ROLLOUT_E2E_UTIL_H_
#define BOOSTER_TESTS_E2E_ROLLOUT_ROLLOUT_E2E_UTIL_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace booster::e2e {

using Json = nlohmann::json;

inline constexpr char kAgentImage[] = "booster.local/agent:e2e";
// The HTTP workload built with cgo: dynamically linked, so LD_PRELOAD reaches it.
inline constexpr char kAppImage[] = "booster.local/httpserver:cgo";
// The same program under another name: a team's new image.
inline constexpr char kAppImageV2[] = "booster.local/httpserver:cgo-v2";

// Builds (when their inputs changed) and imports the two images with
// tests/e2e/rollout/images, from $BOOSTER_AGENT_BIN and $BOOSTER_PRELOAD_LIB.
absl::Status BuildImages();

// The pod template of the HTTP workload: one container `web` (port 8080, readiness on
// /healthz every second, requests 50m/32Mi, limits 500m/64Mi: Burstable QoS), labels
// app=<app>.
Json HttpServerTemplate(const std::string& app);

// A Deployment <name> in <ns> selecting app=<name> with `replicas` and `tmpl`.
Json DeploymentObject(const std::string& ns, const std::string& name, int replicas,
                      const Json& tmpl);

// kubectl apply of a JSON object; kubectl get ... -o json parsed.
absl::Status ApplyJson(const Json& object);
absl::StatusOr<Json> GetJson(const std::vector<std::string>& args);

// Waits for `kubectl rollout status` of deployment/<name> to succeed.
absl::Status WaitRolledOut(const std::string& ns, const std::string& name, absl::Duration timeout);

// Deletes deployment/<name> in <ns> and waits up to a minute until no pod labelled
// app=<name> is left, so the next case starts from no pod at all.
absl::Status DeleteDeploymentAndWaitPodsGone(const std::string& ns, const std::string& name);

// The host PID of the first process of `container` in pod <ns>/<pod> (cgroup v1,
// cgroupfs driver: /sys/fs/cgroup/cpu/booster-e2e/kubepods/<qos>/pod<uid>/<id>/).
absl::StatusOr<pid_t> ContainerPid(const std::string& ns, const std::string& pod,
                                   const std::string& container);

// One thread of a process, read through the host's /proc/<pid>/task/<tid>.
struct ThreadView {
  int tid = 0;         // the host's id
  int pod_tid = 0;     // its id in the pod's PID namespace (NSpid's last field): what the
                       // agent sees and journals
  std::string cpus;    // Cpus_allowed_list
  std::string policy;  // the memory policy numa_maps shows ("default", "prefer:0", "bind:0")
};

// The threads of host process `pid` (none once it exited).
std::vector<ThreadView> Threads(pid_t pid);
// "tid:cpus/policy ...", for failure messages.
std::string Describe(const std::vector<ThreadView>& threads);

// Pods, Deployments, ReplicaSets, profiles and Events of `ns`, for a failure message.
std::string Diagnose(const std::string& ns);

// booster-operator ($BOOSTER_OPERATOR_BIN) as a host process: watches only `ns`, leader
// election in `ns`, agent image kAgentImage, metrics and health on 127.0.0.1:0, text
// logs appended to a file kept under $BOOSTER_E2E_STATE/logs/rollout-e2e/. Killed with
// SIGKILL when destroyed.
class OperatorProcess {
 public:
  explicit OperatorProcess(std::string ns, std::vector<std::string> extra_flags = {});
  ~OperatorProcess();
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Starts a new process (a new --identity each time) and waits until it logged the
  // address of its metrics and health servers and /readyz answers 200.
  absl::Status Start(absl::Duration timeout = absl::Seconds(60));
  // SIGKILL, then reaps it.
  absl::Status Kill();
  // SIGTERM; the exit status (0 expected) once it exited, or kDeadlineExceeded.
  absl::StatusOr<int> Stop(absl::Duration timeout);
  // Waits for the process to exit by itself; its exit status (128 + signal if killed).
  absl::StatusOr<int> WaitExit(absl::Duration timeout);
  bool Running() const { return pid_ > 0; }

  // GET http://<metrics address>/metrics.
  absl::StatusOr<std::string> Metrics() const;
  // The value of one sample line (`name{labels} value`) whose text before the value
  // starts with `series`, e.g. "booster_operator_leader".
  absl::StatusOr<double> Metric(absl::string_view series) const;

  // Runs the next Start()'s process with primary group `gid` and no others (setpriv),
  // still as root: a firewall rule can then match its packets alone (`-m owner
  // --gid-owner`), as the chaos test that partitions one replica does.
  void set_group(gid_t gid) { gid_ = gid; }

  const std::string& log_path() const { return log_path_; }
  // The whole log (every run of this object), for failure messages.
  std::string Logs() const;

 private:
  std::string ns_;
  std::vector<std::string> extra_flags_;
  std::string log_path_;
  pid_t pid_ = -1;
  gid_t gid_ = 0;  // 0: the test's own groups
  int runs_ = 0;
  std::string metrics_address_;
  std::string health_address_;
};

}  // namespace booster::e2e

#endif  // BOOSTER_TESTS_E2E_ROLLOUT_ROLLOUT_E2E_UTIL_H_
