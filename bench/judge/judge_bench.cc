// bench/judge: how fast mode Metrics rolls back a canary whose p99 doubles, and what one
// verdict costs in CPU (docs/benchmarks.md, "Judge: detection time and CPU per verdict").
//
// detect: the operator's real decision path on a simulated clock. rollout::Reconcile (the
// state machine), analysis::JudgeVerdictSource and controller::StoreWindowSource over a real
// feedback::WindowStore, opened per step the way the operator's StepTracker does. The plan's
// actions go to the simulated API server the state machine's tests use
// (operator/rollout/testing/deployment_sim.h); this file keeps the Deployments' pods: a pod
// is created as soon as its Deployment asks for it, is ready --ready-seconds later, and is
// removed when its template changes or the Deployment shrinks. The operator reconciles at
// the plan's requeue and one tick (100 ms) after a watch event (its own writes, status
// included, and Deployment status changes), or with --reconcile=1s every second. Every
// pod's agent starts within a second of the pod and reports one window per interval on its
// own phase, latencyP99 lognormal with CV 10% and throughput lognormal with CV 5%, filed
// under its arm like the feedback server does. Scenarios: "aa" (no regression), "start"
// (the canary's p99 is 2x from its first window), "mid" (2x from an onset drawn uniformly
// within step 1's analysis), "at" (from --onset-minutes into step 1's analysis, in a step of
// --step-duration; --regression sets the factor, 2 by default). Prints one JSON line per run; JUDGE_BENCH_DEBUG=1 also prints
// to stderr the windows a Fail was judged on and why a step was extended.
//
// cpu: wall and CPU time (CLOCK_PROCESS_CPUTIME_ID) per verdict, for analysis::Judge alone
// and for JudgeVerdictSource over a StoreWindowSource (the store query and copy included),
// against rollout::TimeVerdictSource measured in the same invocation, with 2 metrics and
// W windows per arm, at a step-end look (every check runs) and, for Judge alone, at a
// mid-step look (location tests only). Rounds alternate the sources; medians are printed as
// JSON lines.
//
//   judge_bench detect --scenario=mid --runs=200 --seed=1 [--reconcile=requeue|1s]
//   judge_bench detect --scenario=at --onset-minutes=5 --step-duration=15m --regression=1.2
//   judge_bench cpu --windows=24,100,1000 [--min-seconds=0.3] [--rounds=5]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/analysis/judge.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/controller/store_window_source.h"
#include "operator/feedback/window_store.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/state_machine.h"
#include "operator/rollout/testing/deployment_sim.h"
#include "operator/rollout/verdict.h"

namespace booster::bench {
namespace {

using rollout::Action;
using rollout::ActionType;
using rollout::Json;
using rollout::Phase;

constexpr char kNamespace[] = "shop";
constexpr char kProfileName[] = "web-profile";
constexpr char kProfileKey[] = "shop/web-profile";
constexpr double kBaseP99 = 0.050;         // seconds
constexpr double kBaseThroughput = 250.0;  // requests per second per pod
constexpr double kP99Cv = 0.10;
constexpr double kThroughputCv = 0.05;

// The profile of the runs (docs/benchmarks.md states it); `step_duration` replaces its 2m.
Json SpecJson(const std::string& step_duration = "2m") {
  Json spec = Json::parse(R"json({
    "targetRef": {"kind": "Deployment", "name": "web"},
    "tuning": {"sysctls": {"net.core.somaxconn": "4096"},
               "runtime": {"preload": {"listenBacklog": 4096, "tcpNoDelay": true}}},
    "rollout": {
      "steps": [25, 50, 100], "stepDuration": "2m", "progressDeadline": "10m",
      "analysis": {
        "mode": "Metrics", "interval": "5s", "warmup": "5s", "minSamples": 6,
        "confidence": 0.95, "maxExtensions": 2,
        "metrics": [{"name": "latencyP99", "maxRegressionPercent": 5},
                    {"name": "throughput", "maxRegressionPercent": 5}]}}})json");
  spec["rollout"]["stepDuration"] = step_duration;
  return spec;
}

Json OriginalTemplate() {
  return Json::parse(R"json({
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "web:1",
                             "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}})json");
}

// Lognormal with median 1 and the given coefficient of variation.
double LogNormal(std::mt19937_64& rng, double cv) {
  const double sigma = std::sqrt(std::log1p(cv * cv));
  std::normal_distribution<double> z(0.0, sigma);
  return std::exp(z(rng));
}

struct Pod {
  std::string name;
  std::string uid;
  absl::Time created;
  std::string marker;   // TemplateMarker of the template it runs
  absl::Time next_end;  // its agent's next window ends here
  uint64_t sequence = 0;
};

// kAt: the onset a fixed time into step 1's analysis (Options::onset_at).
enum class Scenario { kAa, kStart, kMid, kAt };

struct Options {
  Scenario scenario = Scenario::kMid;
  double regression = 2.0;  // the canary's p99 times this from the onset
  std::string step_duration = "2m";
  absl::Duration onset_at = absl::ZeroDuration();
};

struct RunResult {
  std::string outcome;  // final phase
  std::string fail_reason;
  std::string fail_message;
  int fail_step = 0;
  std::optional<double> onset_s;        // since the rollout started
  std::optional<double> fail_s;         // onset -> the plan's transition to RollingBack
  std::optional<double> rolled_back_s;  // onset -> RolledBack
  int reconciles = 0;
  int verdict_calls = 0;
  int extensions = 0;
  int windows_stale = 0;
};

// Counts the state machine's questions and passes them on.
class CountingSource final : public rollout::VerdictSource {
 public:
  explicit CountingSource(rollout::VerdictSource& inner) : inner_(inner) {}
  rollout::Verdict Judge(const rollout::VerdictRequest& r) override {
    ++calls;
    return inner_.Judge(r);
  }
  int calls = 0;

 private:
  rollout::VerdictSource& inner_;
};

// One rollout of one profile on a fake API server with N pods, on a simulated clock.
class Rollout {
 public:
  Rollout(int32_t replicas, const Options& options, uint64_t seed, bool every_second,
          absl::Duration ready_delay)
      : scenario_(options.scenario),
        regression_(options.regression),
        onset_at_(options.onset_at),
        rng_(seed),
        every_second_(every_second),
        ready_delay_(ready_delay),
        profile_(
            rollout::testing::ProfileObject(kProfileName, kNamespace, "profile-uid",
                                            SpecJson(options.step_duration))),
        api_(rollout::testing::DeploymentObject("web", kNamespace, "target-uid", replicas,
                                                OriginalTemplate())) {
    // The target's pods have been running for an hour.
    SyncPods(api_.target(), target_pods_, start_ - absl::Hours(1));
    Settle(api_.target(), target_pods_);
  }

  RunResult Run() {
    RunResult r;
    controller::StoreWindowSource windows(&store_);
    analysis::JudgeVerdictSource judge(windows);
    CountingSource verdicts(judge);
    const absl::Duration tick = absl::Milliseconds(100);
    const absl::Time give_up = start_ + absl::Minutes(30);
    // The work queue's pending wake-ups for the profile: the plan's requeues (AddAfter) and
    // the watch events of the operator's own writes.
    std::set<absl::Time> wakeups = {start_};
    for (now_ = start_; now_ < give_up; now_ += tick) {
      DeliverWindows(r);
      if (SettleAll()) wakeups.insert(now_ + tick);  // a Deployment's status changed
      if (every_second_ ? now_ < next_second_ : *wakeups.begin() > now_) continue;
      wakeups.erase(wakeups.begin(), wakeups.upper_bound(now_));
      next_second_ = now_ + absl::Seconds(1);
      ++r.reconciles;
      absl::StatusOr<rollout::Profile> p = rollout::ParseProfile(profile_);
      if (!p.ok() || !p->spec.ok()) {
        std::fprintf(stderr, "judge_bench: the profile does not parse\n");
        std::exit(1);
      }
      rollout::Observations obs{rollout::ObserveDeployment(api_.target()),
                                rollout::ObserveDeployment(api_.canary()), ""};
      obs.arms = ArmsReport();
      obs.baseline = rollout::ObserveDeployment(api_.baseline());
      const Phase before = p->status.phase;
      rollout::Plan plan = rollout::Reconcile(*p, obs, verdicts, now_);
      profile_["status"] = rollout::StatusToJson(plan.status);
      Track(plan.status, obs);
      absl::Duration requeue = absl::Seconds(10);
      bool wrote = false;
      for (const Action& a : plan.actions) {
        if (a.type == ActionType::kRequeueAfter) requeue = a.delay;
        if (a.type != ActionType::kRecordEvent && a.type != ActionType::kRequeueAfter) {
          wrote = true;
        }
        Execute(a);
      }
      if (SettleAll()) wrote = true;
      const Phase after = plan.status.phase;
      if (after == Phase::kProgressing && plan.status.current_step == 1 &&
          plan.status.analysis_start_time != absl::InfinitePast() && !onset_) {
        // Step 1's analysis started (both arms ready): the regression's onset.
        if (scenario_ == Scenario::kStart) {
          onset_ = plan.status.analysis_start_time;
        } else if (scenario_ == Scenario::kAt) {
          onset_ = plan.status.analysis_start_time + onset_at_;
        } else if (scenario_ == Scenario::kMid) {
          const double step_s = absl::ToDoubleSeconds(p->spec->rollout.step_duration);
          onset_ = plan.status.analysis_start_time +
                   absl::Seconds(std::uniform_real_distribution<double>(0, step_s)(rng_));
        }
        if (onset_) r.onset_s = absl::ToDoubleSeconds(*onset_ - start_);
      }
      if (before != Phase::kRollingBack && after == Phase::kRollingBack) {
        if (plan.status.last_transition) {
          r.fail_reason = plan.status.last_transition->reason;
          r.fail_message = plan.status.last_transition->message;
        }
        r.fail_step = p->status.current_step;
        if (onset_) r.fail_s = absl::ToDoubleSeconds(now_ - *onset_);
        if (std::getenv("JUDGE_BENCH_DEBUG") != nullptr) {
          auto w = windows.Windows(
              {kNamespace, kProfileName, p->status.current_step, p->status.analysis_start_time});
          for (const auto* arm : {&w->baseline, &w->canary}) {
            for (const auto& [metric, ws] : *arm) {
              std::fprintf(stderr, "%s %s:", arm == &w->canary ? "canary" : "baseline",
                           metric.c_str());
              for (const auto& x : ws) {
                std::fprintf(stderr, " %s@%.1f-%.1f=%.4g", x.pod.c_str(),
                             absl::ToDoubleSeconds(x.start - start_),
                             absl::ToDoubleSeconds(x.end - start_), x.value);
              }
              std::fprintf(stderr, "\n");
            }
          }
        }
      }
      if (after == Phase::kRolledBack) {
        if (onset_) r.rolled_back_s = absl::ToDoubleSeconds(now_ - *onset_);
      }
      if (plan.status.extensions > r.extensions && plan.status.last_decision &&
          std::getenv("JUDGE_BENCH_DEBUG") != nullptr) {
        std::fprintf(stderr, "extension: %s\n", plan.status.last_decision->message.c_str());
      }
      r.extensions = std::max(r.extensions, plan.status.extensions);
      if (after == Phase::kRolledBack || after == Phase::kPromoted || after == Phase::kFailed) {
        r.outcome = std::string(rollout::PhaseName(after));
        break;
      }
      // The real operator reconciles at the plan's requeue, and again when one of its writes
      // (the profile's status included: the reconciler enqueues every update of a profile)
      // comes back as a watch event; here that event arrives one tick later.
      wakeups.insert(now_ + requeue);
      if (wrote || plan.status_changed) wakeups.insert(now_ + tick);
    }
    if (r.outcome.empty()) r.outcome = "Timeout";
    r.verdict_calls = verdicts.calls;
    return r;
  }

 private:
  // What StepTracker (operator/controller/process.cc) does after every reconcile.
  void Track(const rollout::RolloutStatus& status, const rollout::Observations& obs) {
    const bool stepping = (status.phase == Phase::kProgressing || status.phase == Phase::kPaused) &&
                          status.current_step > 0;
    if (stepping) {
      store_.BeginStep(kProfileKey,
                       feedback::StepId{.generation = status.observed_generation,
                                        .step = status.current_step,
                                        .started = status.step_start_time},
                       {rollout::StepBaselineMarker(status, obs),
                        rollout::TemplateMarker(obs.canary.pod_template)});
    } else if (status.phase == Phase::kPromoted || status.phase == Phase::kRolledBack ||
               status.phase == Phase::kFailed) {
      store_.Forget(kProfileKey);
    }
  }

  // What process.cc's ReconcilerOptions::arms reads from the store.
  std::optional<rollout::ArmsReport> ArmsReport() const {
    std::optional<feedback::WindowStore::StepSummary> s = store_.CurrentSummary(kProfileKey);
    if (!s) return std::nullopt;
    auto arm = [&](feedback::Arm a) {
      const feedback::WindowStore::ArmSummary& x = s->arms[static_cast<int>(a)];
      return rollout::ArmReport{static_cast<int>(x.pods), static_cast<int64_t>(x.windows)};
    };
    return rollout::ArmsReport{s->step.step, arm(feedback::Arm::kBaseline),
                               arm(feedback::Arm::kCanary)};
  }

  // Every window that ended by now (plus a 100 ms transport delay) reaches the store.
  void DeliverWindows(RunResult& r) {
    const absl::Duration interval = absl::Seconds(5);
    const absl::Duration delay = absl::Milliseconds(100);
    // The target's pods report as the baseline arm too; while a fresh baseline runs the
    // store refuses theirs (another template) and files the fresh pods' instead.
    for (auto* pods : {&target_pods_, &canary_pods_, &baseline_pods_}) {
      const bool canary = pods == &canary_pods_;
      for (Pod& pod : *pods) {
        while (pod.next_end + delay <= now_) {
          feedback::Window w;
          w.pod = pod.name;
          w.pod_uid = pod.uid;
          w.pod_created = pod.created;
          w.incarnation = "agent-" + pod.uid;
          w.sequence = ++pod.sequence;
          w.start = pod.next_end - interval;
          w.end = pod.next_end;
          w.template_hash = pod.marker;
          w.profile_generation = 1;
          // A window that starts at or after the onset carries the regression; one that
          // straddles it does not (detection is timed from the onset, so this can only
          // make it look slower, by less than one interval).
          const bool regressed = canary && onset_ && w.start >= *onset_;
          const double p99 = kBaseP99 * LogNormal(rng_, kP99Cv) * (regressed ? regression_ : 1);
          const double rate = kBaseThroughput * LogNormal(rng_, kThroughputCv);
          w.SetMetric("latencyP99", p99, static_cast<int64_t>(rate * 5));
          w.SetMetric("throughput", rate, static_cast<int64_t>(rate * 5));
          const feedback::AddResult added =
              store_.Add(kProfileKey, canary ? feedback::Arm::kCanary : feedback::Arm::kBaseline,
                         std::move(w));
          if (added == feedback::AddResult::kStaleTemplate) ++r.windows_stale;
          pod.next_end += interval;
        }
      }
    }
  }

  // Pods follow their Deployment: a changed template replaces them all, replicas add or
  // remove the newest. An agent starts within a second of its pod and reports on its own
  // phase.
  void SyncPods(const Json& d, std::vector<Pod>& pods, absl::Time created) {
    if (d.is_null()) {
      pods.clear();
      return;
    }
    const std::string marker = rollout::TemplateMarker(d["spec"]["template"]);
    const int32_t want = d["spec"]["replicas"].get<int32_t>();
    std::erase_if(pods, [&](const Pod& p) { return p.marker != marker; });
    while (static_cast<int32_t>(pods.size()) > want) pods.pop_back();
    while (static_cast<int32_t>(pods.size()) < want) {
      Pod p;
      p.uid = absl::StrCat("uid-", ++pod_counter_);
      p.name = absl::StrCat(d["metadata"]["name"].get<std::string>(), "-", pod_counter_);
      p.created = created;
      p.marker = marker;
      const double agent_start = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
      p.next_end = created + absl::Seconds(agent_start) + absl::Seconds(5);
      pods.push_back(std::move(p));
    }
  }

  // The API server never refuses the one profile's writes here: nobody else writes.
  void Execute(const Action& a) {
    const absl::Status s = api_.Execute(a, profile_);
    if (!s.ok()) {
      std::fprintf(stderr, "judge_bench: %s refused: %s\n", rollout::DescribeAction(a).c_str(),
                   s.ToString().c_str());
      std::exit(1);
    }
  }

  // The Deployments' pods follow their specs at once; a pod is ready `ready_delay_` after
  // it was created. True when a Deployment's status changed (a watch event).
  bool SettleAll() {
    SyncPods(api_.target(), target_pods_, now_);
    SyncPods(api_.canary(), canary_pods_, now_);
    SyncPods(api_.baseline(), baseline_pods_, now_);
    const bool t = Settle(api_.target(), target_pods_);
    const bool c = Settle(api_.canary(), canary_pods_);
    const bool b = Settle(api_.baseline(), baseline_pods_);
    return t || c || b;
  }
  bool Settle(Json& d, const std::vector<Pod>& pods) const {
    if (d.is_null()) return false;
    const int32_t ready = static_cast<int32_t>(std::count_if(
        pods.begin(), pods.end(), [&](const Pod& p) { return p.created + ready_delay_ <= now_; }));
    return rollout::testing::SetDeploymentStatus(d, static_cast<int32_t>(pods.size()), ready);
  }

  const Scenario scenario_;
  const double regression_;
  const absl::Duration onset_at_;
  std::mt19937_64 rng_;
  const bool every_second_;
  const absl::Duration ready_delay_;
  const absl::Time start_ = absl::FromUnixSeconds(1'800'000'000);
  absl::Time now_ = start_;
  absl::Time next_second_ = start_;
  std::optional<absl::Time> onset_;
  Json profile_;
  rollout::testing::DeploymentSim api_;
  std::vector<Pod> target_pods_;
  std::vector<Pod> canary_pods_;
  std::vector<Pod> baseline_pods_;  // the fresh baseline's (analysis.baseline Fresh)
  feedback::WindowStore store_;
  int pod_counter_ = 0;
};

std::string Flag(int argc, char** argv, const std::string& name, const std::string& def) {
  const std::string prefix = "--" + name + "=";
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return def;
}

int Detect(int argc, char** argv) {
  const std::string scenario_name = Flag(argc, argv, "scenario", "mid");
  Options options;
  if (scenario_name == "aa") {
    options.scenario = Scenario::kAa;
  } else if (scenario_name == "start") {
    options.scenario = Scenario::kStart;
  } else if (scenario_name == "at") {
    options.scenario = Scenario::kAt;
  } else if (scenario_name != "mid") {
    std::fprintf(stderr, "judge_bench: --scenario must be aa, start, mid or at\n");
    return 2;
  }
  double onset_minutes = 0;
  if (!absl::SimpleAtod(Flag(argc, argv, "regression", "2"), &options.regression) ||
      options.regression <= 0 ||
      !absl::SimpleAtod(Flag(argc, argv, "onset-minutes", "0"), &onset_minutes) ||
      onset_minutes < 0) {
    std::fprintf(stderr, "judge_bench: bad --regression or --onset-minutes\n");
    return 2;
  }
  options.onset_at = absl::Seconds(60 * onset_minutes);
  options.step_duration = Flag(argc, argv, "step-duration", "2m");
  int runs = 200, replicas = 4;
  uint64_t seed = 1;
  if (!absl::SimpleAtoi(Flag(argc, argv, "runs", "200"), &runs) ||
      !absl::SimpleAtoi(Flag(argc, argv, "seed", "1"), &seed) ||
      !absl::SimpleAtoi(Flag(argc, argv, "replicas", "4"), &replicas)) {
    std::fprintf(stderr, "judge_bench: bad --runs, --seed or --replicas\n");
    return 2;
  }
  const bool every_second = Flag(argc, argv, "reconcile", "requeue") == "1s";
  double ready_seconds = 3;
  if (!absl::SimpleAtod(Flag(argc, argv, "ready-seconds", "3"), &ready_seconds) ||
      ready_seconds < 0) {
    std::fprintf(stderr, "judge_bench: bad --ready-seconds\n");
    return 2;
  }
  for (int i = 0; i < runs; ++i) {
    Rollout rollout(replicas, options, seed * 1'000'003 + static_cast<uint64_t>(i), every_second,
                    absl::Seconds(ready_seconds));
    const RunResult r = rollout.Run();
    Json j = {{"scenario", scenario_name},
              {"regression", options.regression},
              {"step_duration", options.step_duration},
              {"onset_minutes", onset_minutes},
              {"reconcile", every_second ? "1s" : "requeue"},
              {"run", i},
              {"outcome", r.outcome},
              {"fail_reason", r.fail_reason},
              {"fail_message", r.fail_message},
              {"fail_step", r.fail_step},
              {"extensions", r.extensions},
              {"reconciles", r.reconciles},
              {"verdicts", r.verdict_calls},
              {"stale_windows", r.windows_stale}};
    auto opt = [&](const char* key, const std::optional<double>& v) {
      j[key] = v ? Json(*v) : Json(nullptr);
    };
    opt("onset_s", r.onset_s);
    opt("fail_s", r.fail_s);
    opt("rolled_back_s", r.rolled_back_s);
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

// --- cpu ---

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Cost {
  double wall_us = 0;
  double cpu_us = 0;
};

// Calls `f` until `min_seconds` of wall time have passed; per-call cost.
template <typename F>
Cost Measure(F&& f, double min_seconds) {
  int64_t calls = 0;
  const double w0 = WallSeconds(), c0 = CpuSeconds();
  double w1 = w0;
  do {
    for (int i = 0; i < 16; ++i) f();
    calls += 16;
    w1 = WallSeconds();
  } while (w1 - w0 < min_seconds);
  const double c1 = CpuSeconds();
  return Cost{(w1 - w0) * 1e6 / static_cast<double>(calls),
              (c1 - c0) * 1e6 / static_cast<double>(calls)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int Cpu(int argc, char** argv) {
  std::vector<int> sizes;
  for (absl::string_view s : absl::StrSplit(Flag(argc, argv, "windows", "24,100,1000"), ',')) {
    int w = 0;
    if (!absl::SimpleAtoi(s, &w) || w <= 0) {
      std::fprintf(stderr, "judge_bench: bad --windows\n");
      return 2;
    }
    sizes.push_back(w);
  }
  double min_seconds = 0.3;
  int rounds = 5;
  if (!absl::SimpleAtod(Flag(argc, argv, "min-seconds", "0.3"), &min_seconds) ||
      !absl::SimpleAtoi(Flag(argc, argv, "rounds", "5"), &rounds) || rounds < 1) {
    std::fprintf(stderr, "judge_bench: bad --min-seconds or --rounds\n");
    return 2;
  }
  absl::StatusOr<rollout::Profile> profile = rollout::ParseProfile(
      Json{{"apiVersion", rollout::kApiVersion},
           {"kind", rollout::kKind},
           {"metadata", {{"name", kProfileName}, {"namespace", kNamespace}, {"uid", "u"}}},
           {"spec", SpecJson()}});
  if (!profile.ok() || !profile->spec.ok()) {
    std::fprintf(stderr, "judge_bench: the profile does not parse\n");
    return 1;
  }
  const rollout::AnalysisSpec& spec = profile->spec->rollout.analysis;
  const absl::Duration step_duration = profile->spec->rollout.step_duration;
  const absl::Duration interval = spec.interval;

  for (int w : sizes) {
    // W windows per arm over 4 pods per arm (A/A, so every test runs to the end), pods warm.
    std::mt19937_64 rng(42 + static_cast<uint64_t>(w));
    const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
    const int pods = 4;
    const int per_pod = (w + pods - 1) / pods;
    feedback::WindowStore store;
    const feedback::StepId step{.generation = 1, .step = 1, .started = t0};
    store.BeginStep(kProfileKey, step, {"", ""});
    for (feedback::Arm arm : feedback::kArms) {
      int made = 0;
      for (int k = 0; k < per_pod && made < w; ++k) {
        for (int p = 0; p < pods && made < w; ++p, ++made) {
          feedback::Window win;
          win.pod = absl::StrCat(feedback::ArmName(arm), "-", p);
          win.pod_uid = win.pod;
          win.pod_created = t0 - absl::Hours(1);
          win.incarnation = "i";
          win.sequence = static_cast<uint64_t>(k + 1);
          win.start = t0 + interval * k + absl::Milliseconds(100 * p);
          win.end = win.start + interval;
          win.SetMetric("latencyP99", kBaseP99 * LogNormal(rng, kP99Cv), 1000);
          win.SetMetric("throughput", kBaseThroughput * LogNormal(rng, kThroughputCv), 1000);
          store.Add(kProfileKey, arm, std::move(win));
        }
      }
    }
    // The step is over (every check of a step end runs: the dearest look), at the last look.
    const absl::Time now = t0 + std::max(step_duration, interval * (per_pod + 1));
    rollout::VerdictRequest req;
    req.profile_namespace = kNamespace;
    req.profile_name = kProfileName;
    req.step = 1;
    req.steps = static_cast<int>(profile->spec->rollout.steps.size());
    req.weight = 50;
    req.analysis_start = t0;
    req.step_duration = std::max(step_duration, interval * (per_pod + 1));
    req.analysis = &spec;
    req.now = now;
    controller::StoreWindowSource windows(&store);
    analysis::JudgeVerdictSource judge_source(windows);
    rollout::TimeVerdictSource time_source;
    absl::StatusOr<analysis::ArmWindows> arm_windows =
        windows.Windows({kNamespace, kProfileName, 1, t0});
    const analysis::Look look = analysis::LookFor(req, req.steps);
    analysis::JudgeOptions judge_options;
    judge_options.warmup = spec.warmup;

    const analysis::Decision check = analysis::Judge(spec, *arm_windows, look, judge_options);
    const rollout::Verdict check_v = judge_source.Judge(req);
    int64_t sink = 0;
    analysis::Look mid_look = look;
    mid_look.step_over = false;
    std::vector<double> time_wall, time_cpu, judge_wall, judge_cpu, source_wall, source_cpu;
    std::vector<double> mid_cpu;
    for (int round = 0; round < rounds; ++round) {
      const Cost t =
          Measure([&] { sink += static_cast<int>(time_source.Judge(req).kind); }, min_seconds);
      const Cost j = Measure(
          [&] {
            sink += static_cast<int>(analysis::Judge(spec, *arm_windows, look, judge_options).kind);
          },
          min_seconds);
      const Cost s =
          Measure([&] { sink += static_cast<int>(judge_source.Judge(req).kind); }, min_seconds);
      const Cost m = Measure(
          [&] {
            sink +=
                static_cast<int>(analysis::Judge(spec, *arm_windows, mid_look, judge_options).kind);
          },
          min_seconds);
      mid_cpu.push_back(m.cpu_us);
      time_wall.push_back(t.wall_us), time_cpu.push_back(t.cpu_us);
      judge_wall.push_back(j.wall_us), judge_cpu.push_back(j.cpu_us);
      source_wall.push_back(s.wall_us), source_cpu.push_back(s.cpu_us);
    }
    const double tc = Median(time_cpu);
    Json j = {{"windows_per_arm", w},
              {"n_baseline", check.metrics.empty() ? 0 : check.metrics[0].baseline.n},
              {"n_canary", check.metrics.empty() ? 0 : check.metrics[0].canary.n},
              {"decision", std::string(analysis::DecisionKindName(check.kind))},
              {"source_verdict", std::string(rollout::VerdictName(check_v.kind))},
              {"rounds", rounds},
              {"time_source_wall_us", Median(time_wall)},
              {"time_source_cpu_us", tc},
              {"judge_wall_us", Median(judge_wall)},
              {"judge_cpu_us", Median(judge_cpu)},
              {"judge_source_wall_us", Median(source_wall)},
              {"judge_mid_step_cpu_us", Median(mid_cpu)},
              {"judge_mid_step_cpu_ratio", Median(mid_cpu) / tc},
              {"judge_source_cpu_us", Median(source_cpu)},
              {"judge_cpu_ratio", Median(judge_cpu) / tc},
              {"judge_source_cpu_ratio", Median(source_cpu) / tc},
              {"sink", sink}};
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace booster::bench

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "detect") return booster::bench::Detect(argc, argv);
  if (mode == "cpu") return booster::bench::Cpu(argc, argv);
  std::fprintf(stderr,
               "usage: judge_bench detect --scenario=aa|start|mid|at [--runs=200] [--seed=1] "
               "[--replicas=4] [--reconcile=requeue|1s] [--ready-seconds=3] [--regression=2] "
               "[--onset-minutes=0] [--step-duration=2m]\n"
               "       judge_bench cpu [--windows=24,100,1000] [--min-seconds=0.3] "
               "[--rounds=5]\n");
  return 2;
}
