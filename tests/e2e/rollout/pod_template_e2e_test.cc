// The pod templates of operator/rollout/pod_template.h on the real node, without the
// operator: a Deployment whose template is EnrolledTemplate(...) or TunedTemplate(...)
// gets Ready pods, the install init container put libbooster.so into the shared volume,
// the agent sidecar runs and reports, the runtime library is mapped into the app's
// process (seen through the host PID namespace), the agent runs as a non-root user and
// samples the app's processes through the shared process namespace (its /metrics on the
// named port), and the tuned template's sysctl, Go knobs and library knobs reach the
// app's network namespace and environment.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/types.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

class PodTemplateE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = BuildImages();
    ASSERT_TRUE(s.ok()) << s;
  }

  rollout::MutationOptions Options() const {
    rollout::MutationOptions o;
    o.agent_image = kAgentImage;
    return o;
  }
  rollout::EnrollContext Context() const { return {ns_.name(), "web", {}}; }

  // Deploys `tmpl` as deployment/web with one replica and returns its pod's name.
  std::string DeployAndGetPod(const Json& tmpl) {
    absl::Status s = ApplyJson(DeploymentObject(ns_.name(), "web", 1, tmpl));
    EXPECT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns_.name(), "web", absl::Minutes(3));
    EXPECT_TRUE(s.ok()) << s << Diagnose(ns_.name());
    absl::StatusOr<std::string> pod =
        Kubectl({"-n", ns_.name(), "get", "pods", "-l", "app=web", "--field-selector",
                 "status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}"});
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.ok() ? Trim(*pod) : "";
  }

  // What every enrolled pod must show: install succeeded, app and agent Ready and never
  // restarted, the agent said hello for this pod, libbooster.so mapped in the app process.
  // Returns the app's host PID.
  pid_t ExpectEnrolledPod(const std::string& pod) {
    absl::StatusOr<Json> p = GetJson({"-n", ns_.name(), "get", "pod", pod});
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return -1;
    const Json& st = (*p)["status"];
    bool install_ok = false;
    for (const Json& ic : st.value("initContainerStatuses", Json::array())) {
      if (ic.value("name", "") == rollout::kInstallContainer) {
        install_ok = ic.value("/state/terminated/exitCode"_json_pointer, -1) == 0;
      }
    }
    EXPECT_TRUE(install_ok) << "booster-install did not exit 0" << Diagnose(ns_.name());
    std::vector<std::string> ready;
    for (const Json& cs : st.value("containerStatuses", Json::array())) {
      EXPECT_EQ(cs.value("restartCount", -1), 0) << cs.dump();
      if (cs.value("ready", false) && cs.contains("/state/running"_json_pointer)) {
        ready.push_back(cs.value("name", ""));
      }
    }
    EXPECT_THAT(ready, ::testing::UnorderedElementsAre("web", rollout::kAgentContainer));

    // The agent runs its loop: its first line is the hello of this very pod.
    absl::Status hello = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> logs =
              Kubectl({"-n", ns_.name(), "logs", pod, "-c", rollout::kAgentContainer});
          if (!logs.ok()) return absl::UnavailableError(logs.status().message());
          bool said = false;
          for (absl::string_view line : absl::StrSplit(*logs, '\n')) {
            said |= absl::StrContains(line, "\"type\":\"hello\"") &&
                     absl::StrContains(line, absl::StrCat("\"pod\":\"", pod, "\""));
          }
          if (!said) {
            return absl::UnavailableError(absl::StrCat("no hello yet: ", *logs));
          }
          return true;
        },
        absl::Seconds(30));
    EXPECT_TRUE(hello.ok()) << hello;

    // It runs as a non-root user, and through the pod's shared process namespace it
    // samples the app's processes: its /metrics on the named port shows their memory.
    absl::StatusOr<pid_t> agent_pid = ContainerPid(ns_.name(), pod, rollout::kAgentContainer);
    EXPECT_TRUE(agent_pid.ok()) << agent_pid.status();
    if (agent_pid.ok()) {
      absl::StatusOr<std::string> status = ReadFile(absl::StrCat("/proc/", *agent_pid, "/status"));
      EXPECT_THAT(status.value_or(""), HasSubstr("\nUid:\t65532\t"));
    }
    const std::string ip = (*p).value("/status/podIP"_json_pointer, "");
    std::string metrics;
    absl::Status sampled = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> m = RunCommand(
              {"curl", "-sf", "--max-time", "5", absl::StrCat("http://", ip, ":9901/metrics")});
          if (!m.ok()) return absl::UnavailableError(m.status().message());
          metrics = *m;
          for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
            double v = 0;
            if (absl::StartsWith(line, "booster_pod_rss_bytes") &&
                absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v) && v > 0) {
              return true;
            }
          }
          return absl::UnavailableError("no app memory sampled yet");
        },
        absl::Seconds(90));
    EXPECT_TRUE(sampled.ok()) << sampled << "\n" << metrics;

    absl::StatusOr<pid_t> pid = ContainerPid(ns_.name(), pod, "web");
    EXPECT_TRUE(pid.ok()) << pid.status();
    if (!pid.ok()) return -1;
    absl::StatusOr<std::string> maps = ReadFile(absl::StrCat("/proc/", *pid, "/maps"));
    EXPECT_TRUE(maps.ok()) << maps.status();
    EXPECT_THAT(maps.value_or(""), HasSubstr("/booster/libbooster.so"))
        << "the runtime library is not loaded in the app";
    return *pid;
  }

  // The app process's environment as NAME=value strings.
  static std::vector<std::string> Environ(pid_t pid) {
    absl::StatusOr<std::string> env = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
    EXPECT_TRUE(env.ok()) << env.status();
    return absl::StrSplit(env.value_or(""), '\0', absl::SkipEmpty());
  }

  // A sysctl as the pod's network namespace sees it.
  static std::string PodSysctl(pid_t pid, const std::string& path) {
    absl::StatusOr<std::string> v =
        RunCommand({"nsenter", "-t", absl::StrCat(pid), "-n", "cat", path});
    EXPECT_TRUE(v.ok()) << v.status();
    return Trim(v.value_or(""));
  }

  TestNamespace ns_{"rollout-tmpl"};
};

TEST_F(PodTemplateE2eTest, EnrolledTemplateRunsTheAgentAndTheDormantLibrary) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  absl::StatusOr<Json> tmpl =
      rollout::EnrolledTemplate(HttpServerTemplate("web"), Context(), Options());
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  std::string pod = DeployAndGetPod(*tmpl);
  ASSERT_FALSE(pod.empty());
  pid_t pid = ExpectEnrolledPod(pod);
  ASSERT_GT(pid, 0);
  std::vector<std::string> env = Environ(pid);
  EXPECT_THAT(env, ::testing::Contains("LD_PRELOAD=/booster/libbooster.so"));
  EXPECT_THAT(env, ::testing::Contains("BOOSTER_CONTROL=/booster/control"));
  // Dormant: none of the tuning knobs.
  for (const std::string& e : env) {
    EXPECT_FALSE(absl::StartsWith(e, "GOMAXPROCS=") || absl::StartsWith(e, "BOOSTER_LISTEN")) << e;
  }
  absl::StatusOr<std::string> arm = Kubectl(
      {"-n", ns_.name(), "get", "pod", pod, "-o", "jsonpath={.metadata.labels.booster\\.dev/arm}"});
  EXPECT_EQ(Trim(arm.value_or("")), "baseline");
}

TEST_F(PodTemplateE2eTest, TunedTemplateCarriesSysctlsGoKnobsAndLibraryKnobs) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  absl::StatusOr<std::string> host_somaxconn = ReadFile("/proc/sys/net/core/somaxconn");
  ASSERT_TRUE(host_somaxconn.ok());
  // A value no kernel defaults to, so seeing it proves the pod's own setting.
  const std::string kSomaxconn = Trim(*host_somaxconn) == "3001" ? "3002" : "3001";
  rollout::Tuning tuning;
  tuning.sysctls = {{"net.core.somaxconn", kSomaxconn}, {"net.ipv4.tcp_tw_reuse", "1"}};
  tuning.go.gomaxprocs = "auto";
  tuning.go.gomemlimit = "auto";
  tuning.preload.listen_backlog = 3000;
  tuning.preload.tcp_no_delay = true;
  absl::StatusOr<Json> tmpl = rollout::TunedTemplate(HttpServerTemplate("web"), tuning,
                                                     rollout::kArmCanary, Context(), Options());
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  std::string pod = DeployAndGetPod(*tmpl);
  ASSERT_FALSE(pod.empty());
  pid_t pid = ExpectEnrolledPod(pod);
  ASSERT_GT(pid, 0);

  EXPECT_EQ(PodSysctl(pid, "/proc/sys/net/core/somaxconn"), kSomaxconn);
  EXPECT_EQ(PodSysctl(pid, "/proc/sys/net/ipv4/tcp_tw_reuse"), "1");
  absl::StatusOr<std::string> host_after = ReadFile("/proc/sys/net/core/somaxconn");
  EXPECT_EQ(Trim(host_after.value_or("")), Trim(*host_somaxconn)) << "the host's value changed";

  std::vector<std::string> env = Environ(pid);
  EXPECT_THAT(env, ::testing::Contains("LD_PRELOAD=/booster/libbooster.so"));
  // Limits 500m / 64Mi: GOMAXPROCS rounds the quota up to one CPU, GOMEMLIMIT is 90%.
  EXPECT_THAT(env, ::testing::Contains("GOMAXPROCS=1"));
  EXPECT_THAT(env,
              ::testing::Contains(absl::StrCat("GOMEMLIMIT=", int64_t{64} * 1024 * 1024 * 9 / 10)));
  EXPECT_THAT(env, ::testing::Contains("BOOSTER_LISTEN_BACKLOG=3000"));
  EXPECT_THAT(env, ::testing::Contains("BOOSTER_TCP_NODELAY=1"));

  absl::StatusOr<std::string> agent_env =
      Kubectl({"-n", ns_.name(), "get", "pod", pod, "-o",
               "jsonpath={.spec.containers[?(@.name==\"booster-agent\")].env[?(@.name==\"BOOSTER_"
               "AGENT_MODE\")].value}"});
  EXPECT_EQ(Trim(agent_env.value_or("")), "tune");
  absl::StatusOr<std::string> arm = Kubectl(
      {"-n", ns_.name(), "get", "pod", pod, "-o", "jsonpath={.metadata.labels.booster\\.dev/arm}"});
  EXPECT_EQ(Trim(arm.value_or("")), "canary");
}

// Enrollment keeps the pod's QoS class on the real node: the kubelet's status.qosClass of
// the tuned pod is the class the original template has, for each class.
TEST_F(PodTemplateE2eTest, TheTunedPodKeepsItsQosClass) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  rollout::Tuning tuning;
  tuning.go.gomaxprocs = "auto";
  struct Case {
    const char* qos;
    Json resources;
  };
  for (const Case& c : std::vector<Case>{
           {"Guaranteed", Json::parse(R"({"limits": {"cpu": "500m", "memory": "64Mi"}})")},
           {"BestEffort", Json::object()},
           {"Burstable", Json::parse(R"({"requests": {"cpu": "50m", "memory": "32Mi"},
                                         "limits": {"cpu": "500m", "memory": "64Mi"}})")}}) {
    Json original = HttpServerTemplate("web");
    original["spec"]["containers"][0]["resources"] = c.resources;
    ASSERT_EQ(rollout::QosClassName(rollout::PodQosClass(original)), c.qos);
    absl::StatusOr<Json> tmpl =
        rollout::TunedTemplate(original, tuning, rollout::kArmCanary, Context(), Options());
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    std::string pod = DeployAndGetPod(*tmpl);
    ASSERT_FALSE(pod.empty()) << c.qos;
    absl::StatusOr<std::string> qos =
        Kubectl({"-n", ns_.name(), "get", "pod", pod, "-o", "jsonpath={.status.qosClass}"});
    ASSERT_TRUE(qos.ok()) << qos.status();
    EXPECT_EQ(Trim(*qos), c.qos) << "enrollment changed the pod's QoS class";
    ExpectEnrolledPod(pod);
    // The next case starts from no pod at all.
    absl::Status gone = DeleteDeploymentAndWaitPodsGone(ns_.name(), "web");
    ASSERT_TRUE(gone.ok()) << gone;
  }
}

// tuning.runtime.preload.allocator: the install init container copies the chosen
// allocator from the agent image into the shared volume, and LD_PRELOAD chains it in front
// of libbooster.so, so the loader maps it into the app (read in /proc/<pid>/maps).
TEST_F(PodTemplateE2eTest, TheChosenAllocatorIsLoadedInTheApp) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  struct Case {
    rollout::Allocator allocator;
    const char* file;
  };
  for (const Case& c : {Case{rollout::Allocator::kJemalloc, "libjemalloc.so.2"},
                        Case{rollout::Allocator::kMimalloc, "libmimalloc.so.2"},
                        Case{rollout::Allocator::kTcmalloc, "libtcmalloc_minimal.so.4"}}) {
    rollout::Tuning tuning;
    tuning.preload.allocator = c.allocator;
    absl::StatusOr<Json> tmpl = rollout::TunedTemplate(HttpServerTemplate("web"), tuning,
                                                       rollout::kArmCanary, Context(), Options());
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    std::string pod = DeployAndGetPod(*tmpl);
    ASSERT_FALSE(pod.empty()) << c.file;
    pid_t pid = ExpectEnrolledPod(pod);
    ASSERT_GT(pid, 0);
    absl::StatusOr<std::string> maps = ReadFile(absl::StrCat("/proc/", pid, "/maps"));
    ASSERT_TRUE(maps.ok()) << maps.status();
    EXPECT_THAT(*maps, HasSubstr(absl::StrCat("/booster/", c.file)))
        << "the allocator is not loaded in the app";
    // Only the chosen one.
    for (const char* other : {"libjemalloc", "libmimalloc", "libtcmalloc"}) {
      if (!absl::StartsWith(c.file, other)) {
        EXPECT_THAT(*maps, Not(HasSubstr(other)));
      }
    }
    absl::Status gone = DeleteDeploymentAndWaitPodsGone(ns_.name(), "web");
    ASSERT_TRUE(gone.ok()) << gone;
  }
}

// Under the static CPU manager a Guaranteed app with an integer CPU has CPUs of its own;
// enrolled and tuned, it keeps them: the pod stays Guaranteed (the sidecars' requests
// equal their limits), the app's container gets CPU 1 alone and the agent runs in the
// shared pool (CPU 0, the CPU the node reserves for the system and never hands out).
TEST_F(PodTemplateE2eTest, AGuaranteedAppKeepsItsExclusiveCpuUnderTheStaticCpuManager) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  StaticCpuManager static_policy;
  ASSERT_TRUE(static_policy.status().ok()) << static_policy.status();
  Json original = HttpServerTemplate("web");
  original["spec"]["containers"][0]["resources"] =
      Json::parse(R"({"limits": {"cpu": "1", "memory": "64Mi"}})");
  ASSERT_EQ(rollout::QosClassName(rollout::PodQosClass(original)), "Guaranteed");
  rollout::Tuning tuning;
  tuning.go.gomaxprocs = "auto";
  absl::StatusOr<Json> tmpl =
      rollout::TunedTemplate(original, tuning, rollout::kArmCanary, Context(), Options());
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  std::string pod = DeployAndGetPod(*tmpl);
  ASSERT_FALSE(pod.empty());
  absl::StatusOr<Json> p = GetJson({"-n", ns_.name(), "get", "pod", pod});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p).value("/status/qosClass"_json_pointer, ""), "Guaranteed");
  const std::string uid = (*p).value("/metadata/uid"_json_pointer, "");
  std::map<std::string, std::string> cpus;  // container name -> cpuset.cpus
  for (const Json& cs : (*p)["status"].value("containerStatuses", Json::array())) {
    const std::string id(absl::StripPrefix(cs.value("containerID", ""), "containerd://"));
    absl::StatusOr<std::string> set = ReadFile(absl::StrCat(
        "/sys/fs/cgroup/cpuset/booster-e2e/kubepods/pod", uid, "/", id, "/cpuset.cpus"));
    EXPECT_TRUE(set.ok()) << set.status();
    cpus[cs.value("name", "")] = Trim(set.value_or(""));
  }
  EXPECT_EQ(cpus["web"], "1") << "the enrolled app lost its exclusive CPU";
  EXPECT_EQ(cpus[rollout::kAgentContainer], "0") << "the agent is not in the shared pool";
  ExpectEnrolledPod(pod);
  ASSERT_TRUE(Kubectl({"-n", ns_.name(), "delete", "deploy", "web", "--wait=true"}).ok());
}

}  // namespace
}  // namespace booster::e2e
