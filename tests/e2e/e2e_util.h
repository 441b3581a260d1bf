// Helpers for end-to-end tests on the cluster of tests/e2e/cluster: run a command, drive
// kubectl against the admin kubeconfig, poll a condition with a deadline. Tests registered
// with booster_e2e_test() get KUBECONFIG and BOOSTER_E2E_STATE; link booster::e2e_util.
//
//   ASSERT_OK_AND_ASSIGN-style use:
//     absl::StatusOr<std::string> ip = booster::e2e::Kubectl(
//         {"-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}"});
#ifndef BOOSTER_TESTS_E2E_E2E_UTIL_H_
#define BOOSTER_TESTS_E2E_E2E_UTIL_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace booster::e2e {

// Runs argv[0] (looked up in PATH) with `stdin_data` on its standard input and returns its
// standard output. A non-zero exit is kInternal carrying the exit code and stderr;
// a command that cannot be started is kNotFound.
absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                absl::string_view stdin_data = "");

// The directory holding up/down/build/image/kwok-node/kubectl: $BOOSTER_E2E_CLUSTER_DIR,
// else tests/e2e/cluster of the source tree this was built from.
std::string ClusterDir();

// Runs the cluster's kubectl (tests/e2e/cluster/kubectl) with `args`.
absl::StatusOr<std::string> Kubectl(const std::vector<std::string>& args,
                                    absl::string_view stdin_data = "");

// Applies a manifest given as YAML text.
absl::Status Apply(absl::string_view yaml);

// Polls `condition` every `interval` until it returns true (OK), returns an error other than
// kUnavailable (that error), or `timeout` passes (kDeadlineExceeded carrying the last
// error). Return kUnavailable from `condition` for "not yet, and here is why".
absl::Status WaitFor(const std::function<absl::StatusOr<bool>()>& condition,
                     absl::Duration timeout, absl::Duration interval = absl::Milliseconds(500));

// GET `url` with curl (30 s at most); the body, or why not.
absl::StatusOr<std::string> HttpGet(const std::string& url);

// Asks `url` (a /work?ms=N of the HTTP workload) again and again on one thread, from
// construction until Stop(): the container spins without a pause, so it uses as much CPU
// as its limit lets it. Bounded in time (10 minutes) whatever happens to the test.
class CpuLoad {
 public:
  explicit CpuLoad(std::string url) : url_(std::move(url)), thread_([this] { Run(); }) {}
  ~CpuLoad() { Stop(); }
  CpuLoad(const CpuLoad&) = delete;
  CpuLoad& operator=(const CpuLoad&) = delete;

  void Stop();
  int answered() const { return answered_; }

 private:
  void Run();

  const std::string url_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;  // last: it runs as soon as it is constructed
};

// What the HPA controller last wrote into a HorizontalPodAutoscaler's status.
struct HpaStatus {
  int current_replicas = -1, desired_replicas = -1;
  int utilization = -1;  // -1 until it has read the pods' CPU from metrics.k8s.io
};
absl::StatusOr<HpaStatus> GetHpaStatus(const std::string& ns, const std::string& name);

// An autoscaling/v2 HorizontalPodAutoscaler of Deployment `name` on CPU, target 50% of the
// request, with no stabilization window and 5 s policy periods either way, so each decision
// of the controller (every 5 s on the e2e cluster) takes effect at once.
std::string FastCpuHpaYaml(const std::string& ns, const std::string& name, int min_replicas,
                           int max_replicas);

// A namespace named <prefix>-<random suffix>, created now and deleted (without waiting)
// when this object goes away, so tests do not see each other's objects.
class TestNamespace {
 public:
  explicit TestNamespace(absl::string_view prefix);
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;

  const std::string& name() const { return name_; }
  // Whether the namespace could be created; the reason is in `status()`.
  const absl::Status& status() const { return status_; }

 private:
  std::string name_;
  absl::Status status_;
};

// Switches the kubelet to the static CPU manager policy (CPU 0 reserved for the system;
// a Guaranteed pod's container with an integer CPU request gets exclusive CPUs) for this
// object's lifetime, and back to none afterwards (tests/e2e/cluster/cpu-manager).
class StaticCpuManager {
 public:
  StaticCpuManager();
  ~StaticCpuManager();
  StaticCpuManager(const StaticCpuManager&) = delete;
  StaticCpuManager& operator=(const StaticCpuManager&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// The whole content of a file, or kNotFound.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace booster::e2e

#endif  // BOOSTER_TESTS_E2E_E2E_UTIL_H_
