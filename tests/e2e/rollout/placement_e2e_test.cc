// cpu.placement and cpu.numa on the real node (2 CPUs, one NUMA node), without the
// operator: a Deployment whose template is TunedTemplate(...) runs the agent, which turns
// the pod's BOOSTER_TUNING into its first directive and places the application's threads.
// For the static Go server (booster.local/httpserver:e2e: libbooster.so never loads) and
// the dynamically linked one (booster.local/httpserver:cgo), each thread's
// Cpus_allowed_list and memory policy are read through the host's /proc and checked
// against the documented effect (docs/agent.md, "Placement in the pod"); the agent's
// Applied line says how each knob reached the process.
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/types.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

constexpr char kStaticImage[] = "booster.local/httpserver:e2e";

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

class PlacementE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = BuildImages();
    ASSERT_TRUE(s.ok()) << s;
  }

  struct Pod {
    std::string name;
    pid_t app_pid = -1;
    Json applied;  // the agent's Applied of its first directive (generation 0)
  };

  // Deploys the HTTP server `image` with CPU limit `cpu` ("" = none), tuned with
  // `placement` / `numa`, and waits for the agent's Applied of the pod's tuning.
  Pod Deploy(const std::string& image, const std::string& cpu, rollout::CpuPlacement placement,
             rollout::NumaPolicy numa, std::optional<int> run_as_user = std::nullopt) {
    Pod out;
    Json original = HttpServerTemplate("web");
    Json& c = original["spec"]["containers"][0];
    c["image"] = image;
    c["resources"] = Json::parse(R"({"requests": {"cpu": "50m", "memory": "32Mi"},
                                     "limits": {"memory": "64Mi"}})");
    if (!cpu.empty()) c["resources"]["limits"]["cpu"] = cpu;
    if (run_as_user) c["securityContext"] = {{"runAsUser", *run_as_user}};
    rollout::Tuning tuning;
    tuning.placement = placement;
    tuning.numa = numa;
    rollout::MutationOptions opts;
    opts.agent_image = kAgentImage;
    absl::StatusOr<Json> tmpl = rollout::TunedTemplate(original, tuning, rollout::kArmCanary,
                                                       {ns_.name(), "web", {}}, opts);
    EXPECT_TRUE(tmpl.ok()) << tmpl.status();
    if (!tmpl.ok()) return out;
    absl::Status s = ApplyJson(DeploymentObject(ns_.name(), "web", 1, *tmpl));
    EXPECT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns_.name(), "web", absl::Minutes(3));
    EXPECT_TRUE(s.ok()) << s << Diagnose(ns_.name());
    absl::StatusOr<std::string> pod =
        Kubectl({"-n", ns_.name(), "get", "pods", "-l", "app=web", "--field-selector",
                 "status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}"});
    EXPECT_TRUE(pod.ok()) << pod.status();
    out.name = Trim(pod.value_or(""));
    absl::StatusOr<pid_t> pid = ContainerPid(ns_.name(), out.name, "web");
    EXPECT_TRUE(pid.ok()) << pid.status();
    out.app_pid = pid.value_or(-1);
    std::string logs;
    absl::Status applied = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> l =
              Kubectl({"-n", ns_.name(), "logs", out.name, "-c", rollout::kAgentContainer});
          if (!l.ok()) return absl::UnavailableError(l.status().message());
          logs = *l;
          for (absl::string_view line : absl::StrSplit(logs, '\n')) {
            Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
            if (!j.is_discarded() && j.value("type", "") == "applied" &&
                j.value("action", "") == "apply" && j.value("generation", -1) == 0) {
              out.applied = j;
              return true;
            }
          }
          return absl::UnavailableError("no Applied of the pod's tuning yet");
        },
        absl::Seconds(60));
    EXPECT_TRUE(applied.ok()) << applied << "\n" << logs;
    return out;
  }

  // Removes deployment/web and waits until its pods are gone.
  void Delete() {
    absl::Status gone = DeleteDeploymentAndWaitPodsGone(ns_.name(), "web");
    ASSERT_TRUE(gone.ok()) << gone;
  }

  // Threads started after the Applied are placed too: waits until every thread of the
  // process satisfies `ok` (a rescan happens every tick) and returns them.
  std::vector<ThreadView> SettledThreads(pid_t pid,
                                         const std::function<bool(const ThreadView&)>& ok) {
    std::vector<ThreadView> threads;
    absl::Status s = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          threads = Threads(pid);
          if (threads.size() < 2) return absl::UnavailableError("no threads read");
          for (const ThreadView& t : threads) {
            if (!ok(t)) return absl::UnavailableError(Describe(threads));
          }
          return true;
        },
        absl::Seconds(20));
    EXPECT_TRUE(s.ok()) << s;
    return threads;
  }

  TestNamespace ns_{"placement"};
};

// pinned under a 500m limit on the static server: the plan has ceil(0.5) = 1 CPU, every
// thread is on exactly that CPU, placed from outside (libbooster.so cannot load in a
// static binary); GOMAXPROCS in the plan is 1.
TEST_F(PlacementE2eTest, PinnedStaticServerWithinHalfACpuRunsOnOneCpu) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  Pod pod =
      Deploy(kStaticImage, "500m", rollout::CpuPlacement::kPinned, rollout::NumaPolicy::kNone);
  ASSERT_GT(pod.app_pid, 0);
  ASSERT_TRUE(pod.applied.value("ok", false)) << pod.applied.dump();
  const std::vector<int> plan = pod.applied["plan"].value("cpus", std::vector<int>{});
  ASSERT_EQ(plan.size(), 1u) << pod.applied.dump();
  EXPECT_EQ(pod.applied["plan"].value("gomaxprocs", 0), 1);
  const std::string cpu = absl::StrCat(plan[0]);
  std::vector<ThreadView> threads =
      SettledThreads(pod.app_pid, [&](const ThreadView& t) { return t.cpus == cpu; });
  EXPECT_GE(threads.size(), 3u) << Describe(threads);
  std::cerr << "pinned, 500m, static: " << Describe(threads) << "\n";
  const std::string note = pod.applied["knob_notes"].value("placement", "");
  EXPECT_THAT(note, HasSubstr("sched_setaffinity from outside")) << note;
  Delete();
}

// pinned without a CPU limit: both CPUs in the plan; every thread on exactly one CPU and
// both CPUs used.
TEST_F(PlacementE2eTest, PinnedStaticServerWithoutLimitSpreadsSingleCpuThreadsOverBoth) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  Pod pod = Deploy(kStaticImage, "", rollout::CpuPlacement::kPinned, rollout::NumaPolicy::kNone);
  ASSERT_GT(pod.app_pid, 0);
  ASSERT_TRUE(pod.applied.value("ok", false)) << pod.applied.dump();
  ASSERT_EQ(pod.applied["plan"].value("cpus", std::vector<int>{}).size(), 2u);
  std::vector<ThreadView> threads = SettledThreads(
      pod.app_pid, [](const ThreadView& t) { return t.cpus == "0" || t.cpus == "1"; });
  std::set<std::string> used;
  for (const ThreadView& t : threads) used.insert(t.cpus);
  EXPECT_EQ(used.size(), 2u) << "round-robin should use both CPUs: " << Describe(threads);
  std::cerr << "pinned, no limit, static: " << Describe(threads) << "\n";
  Delete();
}

// spread + bind under a 500m limit, the app as uid 1000 (the agent then runs as the same
// user and can read the app's maps): every thread confined to the plan's single CPU; no
// memory policy, since Linux sets one only from inside a process.
TEST_F(PlacementE2eTest, SpreadStaticServerWithinHalfACpuIsConfinedToOneCpu) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  Pod pod = Deploy(kStaticImage, "500m", rollout::CpuPlacement::kSpread, rollout::NumaPolicy::kBind,
                   /*run_as_user=*/1000);
  ASSERT_GT(pod.app_pid, 0);
  ASSERT_TRUE(pod.applied.value("ok", false)) << pod.applied.dump();
  const std::vector<int> plan = pod.applied["plan"].value("cpus", std::vector<int>{});
  ASSERT_EQ(plan.size(), 1u);
  const std::string cpu = absl::StrCat(plan[0]);
  std::vector<ThreadView> threads =
      SettledThreads(pod.app_pid, [&](const ThreadView& t) { return t.cpus == cpu; });
  std::cerr << "spread+bind, 500m, static: " << Describe(threads) << "\n";
  // No memory policy can be set from outside: the static server keeps the default, and
  // the agent says so.
  for (const ThreadView& t : threads) EXPECT_EQ(t.policy, "default") << t.tid;
  const std::string note = pod.applied["knob_notes"].value("numa", "");
  EXPECT_THAT(note, HasSubstr("not reached")) << note;
  Delete();
}

// The dynamically linked server, run as uid 1000: the agent runs as the same user (no
// capability), sees libbooster.so in its maps, and every thread is pinned to the plan's
// one CPU with libbooster.so's memory policy (preferred, node 0).
TEST_F(PlacementE2eTest, PinnedDynamicServerGetsLibboosterPlacementAndMemoryPolicy) {
  ASSERT_TRUE(ns_.status().ok()) << ns_.status();
  Pod pod = Deploy(kAppImage, "500m", rollout::CpuPlacement::kPinned,
                   rollout::NumaPolicy::kPreferred, /*run_as_user=*/1000);
  ASSERT_GT(pod.app_pid, 0);
  ASSERT_TRUE(pod.applied.value("ok", false)) << pod.applied.dump();
  const std::vector<int> plan = pod.applied["plan"].value("cpus", std::vector<int>{});
  ASSERT_EQ(plan.size(), 1u);
  const std::string cpu = absl::StrCat(plan[0]);
  std::vector<ThreadView> threads = SettledThreads(pod.app_pid, [&](const ThreadView& t) {
    return t.cpus == cpu && (t.policy == "prefer:0" || t.policy == "prefer (many):0");
  });
  std::cerr << "pinned+preferred, 500m, dynamic: " << Describe(threads) << "\n";
  EXPECT_THAT(pod.applied["knob_notes"].value("placement", ""), HasSubstr("libbooster.so loaded"));
  EXPECT_THAT(pod.applied["knob_notes"].value("numa", ""), HasSubstr("by libbooster.so"));
  absl::StatusOr<pid_t> agent = ContainerPid(ns_.name(), pod.name, rollout::kAgentContainer);
  ASSERT_TRUE(agent.ok());
  absl::StatusOr<std::string> status = ReadFile(absl::StrCat("/proc/", *agent, "/status"));
  EXPECT_THAT(status.value_or(""), HasSubstr("\nUid:\t1000\t"));
  EXPECT_THAT(status.value_or(""), HasSubstr("\nCapEff:\t0000000000000000"));
  Delete();
}

}  // namespace
}  // namespace booster::e2e
