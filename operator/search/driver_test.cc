// The search as the operator runs it (driver.h): DriveSearch before every pass of the real
// rollout state machine, over the simulated API server and Deployment controller, with a
// judge that knows how good each tuning truly is. Checks whole searches end to end (what is
// kept, what the target runs, the Events), a restart at every pass, and the edge cases of
// the trial table (docs/search.md, "Trial outcomes").
#include "operator/search/driver.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/profile/tuning.h"
#include "operator/rollout/state_machine.h"
#include "operator/rollout/testing/deployment_sim.h"

namespace booster::search {
namespace {

using rollout::Phase;

Json Template() {
  return Json::parse(R"json({
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "registry.local/web:1",
                             "resources": {"limits": {"cpu": "1", "memory": "256Mi"}}}]}})json");
}

Json SearchSpecJson() {
  return Json::parse(R"json({
    "targetRef": {"kind": "Deployment", "name": "web"},
    "tuning": {},
    "rollout": {"steps": [50, 100], "stepDuration": "1m", "progressDeadline": "5m",
                "analysis": {"metrics": [{"name": "latencyP99", "maxRegressionPercent": 10}]}},
    "search": {"objective": "cpuPerRequest", "minImprovementPercent": 5,
               "knobs": [{"knob": "runtime.preload.allocator", "values": ["jemalloc"]},
                         {"knob": "runtime.go.gogc", "values": [200, 400, 800]},
                         {"sysctl": "net.core.somaxconn", "values": [4096]}]}})json");
}

// How much better (percent of CPU per request) each tuning truly is than no tuning.
using Score = std::function<double(const Json& tuning)>;

double DefaultScore(const Json& t) {
  double s = 0;
  const std::string gogc = t["runtime"]["go"].value("gogc", "");
  if (gogc == "200") s += 10;
  if (gogc == "400") s += 16;
  if (gogc == "800") s += 14;
  if (t["runtime"]["preload"].value("allocator", "") == "jemalloc") s -= 5;
  return s;
}

// The judge of a world where Score is the truth: a step passes when the canary is shown
// better than the baseline by the objective's minImprovementPercent, fails when it is worse,
// and is inconclusive in between.
class WorldJudge final : public rollout::VerdictSource {
 public:
  rollout::Verdict Judge(const rollout::VerdictRequest& r) override {
    ++asked;
    EXPECT_NE(r.analysis, nullptr);
    const rollout::MetricSpec* objective = nullptr;
    for (const rollout::MetricSpec& m : r.analysis->metrics) {
      if (m.name == "cpuPerRequest") objective = &m;
    }
    // A trial's rollout requires the objective to improve; the base rollout does not.
    const double needed = objective != nullptr && objective->min_improvement_percent
                              ? *objective->min_improvement_percent
                              : -1e9;
    const double gain = score(canary) - score(baseline);
    rollout::Verdict v;
    v.evidence["cpuPerRequest.changePercent"] = absl::StrCat(-gain);
    if (gain < 0) {
      v.kind = rollout::VerdictKind::kFail;
      v.reason = "AnalysisFailed";
      v.message = "cpuPerRequest is worse";
    } else if (gain >= needed) {
      v.kind = rollout::VerdictKind::kPass;
      v.reason = "MetricsPassed";
      v.message = "cpuPerRequest is better";
    } else {
      v.kind = rollout::VerdictKind::kInconclusive;
      v.reason = "Inconclusive";
      v.message = "cpuPerRequest did not show the gain";
    }
    return v;
  }
  Score score = DefaultScore;
  Json canary, baseline;
  int asked = 0;
};

class World {
 public:
  explicit World(Json spec = SearchSpecJson())
      : profile_(rollout::testing::ProfileObject("web-profile", "shop", "profile-uid", spec)),
        api_(rollout::testing::DeploymentObject("web", "shop", "target-uid", 2, Template())) {}

  // One reconcile as the reconciler runs it: the search first, then the state machine on
  // the profile the search gives it, the status written, the actions carried out.
  // `execute`: how many of the plan's actions are carried out (fewer: the operator was
  // killed after writing the status).
  void Pass(size_t execute = SIZE_MAX) {
    absl::StatusOr<rollout::Profile> p = rollout::ParseProfile(profile_);
    ASSERT_TRUE(p.ok()) << p.status();
    NoOpCheck check;
    if (go.has_value()) {  // as the reconciler builds it, over the target's template
      check = [&](const Json& best, const Json& trial) -> std::string {
        absl::StatusOr<rollout::ProfileSpec> a = TrialSpec(*p->spec, best);
        absl::StatusOr<rollout::ProfileSpec> b = TrialSpec(*p->spec, trial);
        if (!a.ok() || !b.ok()) return "";
        return rollout::TuningGoMaxProcsNoOp(
            api_.target()["spec"]["template"], a->tuning, b->tuning,
            rollout::EnrollContextFor("shop", "web-profile", *b), rollout::MutationOptions{}, *go);
      };
    }
    SearchPass pass = DriveSearch(*p, now_, check);
    for (SearchEvent& e : pass.events) events.push_back(e);
    if (pass.profile.spec.ok()) {
      judge.canary = rollout::TuningToJson(pass.profile.spec->tuning);
      std::optional<Json> on_target = rollout::TemplateTuning(api_.target()["spec"]["template"]);
      judge.baseline = on_target.value_or(rollout::TuningToJson(rollout::Tuning{}));
    }
    rollout::Observations obs{rollout::ObserveDeployment(api_.target()),
                              rollout::ObserveDeployment(api_.canary()), ""};
    obs.baseline = rollout::ObserveDeployment(api_.baseline());
    // The canary's pods are OOM-killed while a tuning of `oom` runs there.
    if (!api_.canary().is_null() && oom && oom(judge.canary)) {
      obs.rejected_pods = {{"web-booster-x", "canary", "OOMKilled",
                            "container app was OOM-killed: it reached its memory limit"}};
    }
    rollout::Plan plan = rollout::Reconcile(pass.profile, obs, judge, now_);
    profile_["status"] = rollout::StatusToJson(plan.status);
    for (size_t i = 0; i < plan.actions.size() && i < execute; ++i) {
      if (!api_.Execute(plan.actions[i], profile_).ok()) break;
    }
    api_.SettleAll();
    now_ += absl::Seconds(10);
  }
  // Passes until the search is Done (or `max` passes).
  void RunToEnd(int max = 2000, const std::function<void()>& between = nullptr) {
    for (int i = 0; i < max && Search().value("phase", "") != kPhaseDone; ++i) {
      Pass();
      if (between) between();
    }
  }
  Json Search() const {
    Json s = rollout::ParseProfile(profile_)->status.search;
    return s.is_object() ? s : Json::object();
  }
  Phase phase() const { return rollout::ParseProfile(profile_)->status.phase; }
  Json& profile() { return profile_; }
  std::optional<Json> TargetTuning() const {
    return rollout::TemplateTuning(api_.target()["spec"]["template"]);
  }
  bool CanaryGone() const { return api_.canary().is_null() && api_.baseline().is_null(); }
  int32_t Total() const {
    return rollout::testing::SpecReplicas(api_.target()) +
           rollout::testing::SpecReplicas(api_.canary()) +
           rollout::testing::SpecReplicas(api_.baseline());
  }
  std::vector<std::string> Reasons() const {
    std::vector<std::string> out;
    for (const SearchEvent& e : events) out.push_back(e.reason);
    return out;
  }

  WorldJudge judge;
  std::vector<SearchEvent> events;
  std::function<bool(const Json& tuning)> oom;
  // What the agents read of the program (the reconciler's no-op check); unset: unknown.
  std::optional<rollout::GoFacts> go;

 private:
  Json profile_;
  rollout::testing::DeploymentSim api_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

// (knob, value, result) of each trial in the table.
std::vector<std::string> Table(const Json& search) {
  std::vector<std::string> out;
  for (const Json& t : search["trials"]) {
    out.push_back(absl::StrCat(t["knob"].get<std::string>(), "=", t["value"].get<std::string>(),
                               ":", t.value("result", "running")));
  }
  return out;
}

TEST(DriveSearchTest, FindsTheBestTuningOneChangeAtATimeAndTheTargetRunsIt) {
  World w;
  w.RunToEnd();
  const Json s = w.Search();
  ASSERT_EQ(s.value("phase", ""), kPhaseDone) << s.dump(2);
  EXPECT_EQ(s.value("reason", ""), "Exhausted");
  // Likeliest wins first: the listen backlog, the Go GC, the allocator. somaxconn 4096
  // shows nothing (inconclusive: not kept); GOGC 200 is kept, 400 is 6% better than it and
  // kept, 800 is worse than 400 (not kept, the line ends); jemalloc is worse.
  EXPECT_EQ(Table(s), (std::vector<std::string>{
                          "/sysctls/net.core.somaxconn=4096:RolledBack",
                          "/runtime/go/gogc=200:Kept", "/runtime/go/gogc=400:Kept",
                          "/runtime/go/gogc=800:RolledBack",
                          "/runtime/preload/allocator=jemalloc:RolledBack"}));
  EXPECT_EQ(s["best"]["runtime"]["go"]["gogc"], "400");
  EXPECT_EQ(s["trials"][2]["objectiveImprovementPercent"], 6.0);
  EXPECT_EQ(s["trials"][3]["objectiveImprovementPercent"], -2.0);
  EXPECT_EQ(s["trials"][3]["reason"], "AnalysisFailed");
  EXPECT_EQ(s["trials"][0]["reason"], "AnalysisInconclusive");
  // Each trial was judged against the best of its time, which the target ran.
  EXPECT_EQ(s["trials"][3]["baseline"]["runtime"]["go"]["gogc"], "400");
  EXPECT_EQ(s["trials"][1]["baseline"], rollout::TuningToJson(rollout::Tuning{}));
  // The target runs the best; nothing restarts afterwards.
  ASSERT_TRUE(w.TargetTuning().has_value());
  EXPECT_EQ(*w.TargetTuning(), s["best"]);
  EXPECT_EQ(w.phase(), Phase::kRolledBack);
  EXPECT_TRUE(w.CanaryGone());
  const int asked = w.judge.asked;
  for (int i = 0; i < 30; ++i) w.Pass();
  EXPECT_EQ(w.judge.asked, asked);
  EXPECT_EQ(w.Search(), s);
  EXPECT_EQ(w.Reasons(), (std::vector<std::string>{
                             "SearchStarted", "TrialStarted", "TrialNotKept", "TrialStarted",
                             "TrialKept", "TrialStarted", "TrialKept", "TrialStarted",
                             "TrialNotKept", "TrialStarted", "TrialNotKept", "SearchDone"}));
  EXPECT_NE(w.events.back().message.find("the best is trial 3 (runtime.go.gogc = 400)"),
            std::string::npos)
      << w.events.back().message;
}

TEST(DriveSearchTest, AnOomKilledTrialIsRolledBackAtOnceAndTheSearchGoesOn) {
  Json spec = SearchSpecJson();
  spec["search"]["knobs"] = Json::parse(R"([{"knob": "runtime.go.gogc", "values": [400, 5000]},
      {"knob": "runtime.preload.allocator", "values": ["jemalloc"]}])");
  World w(spec);
  w.oom = [](const Json& t) { return t["runtime"]["go"].value("gogc", "") == "5000"; };
  w.judge.score = [](const Json& t) {
    return DefaultScore(t) + (t["runtime"]["go"].value("gogc", "") == "5000" ? 30 : 0);
  };
  w.RunToEnd();
  const Json s = w.Search();
  EXPECT_EQ(Table(s), (std::vector<std::string>{"/runtime/go/gogc=400:Kept",
                                                "/runtime/go/gogc=5000:RolledBack",
                                                "/runtime/preload/allocator=jemalloc:RolledBack"}));
  // Rolled back for the OOM kill before any verdict: no objective figure, though the judge
  // would have liked it.
  EXPECT_EQ(s["trials"][1]["reason"], "OOMKilled");
  EXPECT_FALSE(s["trials"][1].contains("objectiveImprovementPercent"));
  EXPECT_EQ(s["best"]["runtime"]["go"]["gogc"], "400");
  EXPECT_EQ(*w.TargetTuning(), s["best"]);
}

TEST(DriveSearchTest, AGomaxprocsGoAlreadyRunsWithIsSkippedNotTried) {
  Json spec = SearchSpecJson();
  // Under a 1-CPU limit on a 2-CPU node Go 1.26 runs GOMAXPROCS 2 by itself; 1 is a change.
  spec["search"]["knobs"] = Json::parse(R"([{"knob": "runtime.go.gomaxprocs", "values": [2, 1]},
      {"knob": "runtime.go.gogc", "values": [400]}])");
  World w(spec);
  w.go = rollout::GoFacts{.version = "go1.26.0", .cpus = 2};
  w.RunToEnd();
  const Json s = w.Search();
  ASSERT_EQ(s.value("phase", ""), kPhaseDone) << s.dump(2);
  EXPECT_EQ(Table(s), (std::vector<std::string>{"/runtime/go/gogc=400:Kept",
                                                "/runtime/go/gomaxprocs=1:RolledBack"}));
  ASSERT_EQ(s["skipped"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["skipped"][0]["knob"], "/runtime/go/gomaxprocs");
  EXPECT_EQ(s["skipped"][0]["value"], "2");
  EXPECT_NE(s["skipped"][0]["reason"].get<std::string>().find(
                "GOMAXPROCS 2 is what the go1.26.0 program already runs with in container app"),
            std::string::npos)
      << s["skipped"][0];
  EXPECT_NE(s.value("message", "").find("1 candidate skipped as changing nothing"),
            std::string::npos)
      << s.value("message", "");
  int skipped_events = 0;
  for (const SearchEvent& e : w.events) skipped_events += e.reason == "TrialSkipped";
  EXPECT_EQ(skipped_events, 1);
  // Unknown facts: nothing is claimed; GOMAXPROCS 2 is tried (and, no better, ends the line).
  World unknown(spec);
  unknown.RunToEnd();
  EXPECT_EQ(Table(unknown.Search()), (std::vector<std::string>{
                                         "/runtime/go/gogc=400:Kept",
                                         "/runtime/go/gomaxprocs=2:RolledBack"}));
  EXPECT_TRUE(unknown.Search()["skipped"].empty());
}

TEST(DriveSearchTest, StopsAtMaxTrialsWithTheBestOnTheTarget) {
  Json spec = SearchSpecJson();
  spec["search"]["maxTrials"] = 2;
  World w(spec);
  w.RunToEnd();
  const Json s = w.Search();
  EXPECT_EQ(s.value("reason", ""), "MaxTrials");
  EXPECT_EQ(Table(s), (std::vector<std::string>{"/sysctls/net.core.somaxconn=4096:RolledBack",
                                                "/runtime/go/gogc=200:Kept"}));
  EXPECT_EQ(*w.TargetTuning(), s["best"]);
  EXPECT_EQ(w.phase(), Phase::kPromoted);
  // maxTrials raised: the search goes on from its table instead of starting again.
  w.profile()["spec"]["search"]["maxTrials"] = 4;
  w.Pass();
  EXPECT_EQ(w.Search().value("phase", ""), kPhaseSearching);
  w.RunToEnd();
  const Json more = w.Search();
  EXPECT_EQ(more.value("reason", ""), "MaxTrials");
  EXPECT_EQ(Table(more), (std::vector<std::string>{"/sysctls/net.core.somaxconn=4096:RolledBack",
                                                   "/runtime/go/gogc=200:Kept",
                                                   "/runtime/go/gogc=400:Kept",
                                                   "/runtime/go/gogc=800:RolledBack"}));
  EXPECT_EQ(more["specHash"], s["specHash"]);
}

TEST(DriveSearchTest, TheProfilesOwnTuningGoesOutFirstAndTheSearchStartsFromIt) {
  Json spec = SearchSpecJson();
  spec["tuning"] = Json::parse(R"({"runtime": {"go": {"gomemlimit": "auto"}}})");
  World w(spec);
  w.Pass();
  EXPECT_EQ(w.Search().value("phase", ""), kPhaseBase);
  w.RunToEnd();
  const Json s = w.Search();
  EXPECT_EQ(s.value("reason", ""), "Exhausted");
  ASSERT_FALSE(s["trials"].empty());
  EXPECT_EQ(s["trials"][0]["baseline"]["runtime"]["go"]["gomemlimit"], "auto");
  EXPECT_EQ(s["best"]["runtime"]["go"]["gomemlimit"], "auto");
  EXPECT_EQ(s["best"]["runtime"]["go"]["gogc"], "400");
  EXPECT_EQ(*w.TargetTuning(), s["best"]);
}

TEST(DriveSearchTest, ABaseThatIsRolledBackEndsTheSearchWithAWarning) {
  Json spec = SearchSpecJson();
  spec["tuning"] = Json::parse(R"({"runtime": {"preload": {"allocator": "jemalloc"}}})");
  spec["search"]["knobs"] = Json::parse(R"([{"knob": "runtime.go.gogc", "values": [200]}])");
  World w(spec);
  w.RunToEnd();
  const Json s = w.Search();
  EXPECT_EQ(s.value("reason", ""), "BaseRolledBack");
  EXPECT_TRUE(s["trials"].empty());
  EXPECT_FALSE(w.TargetTuning().has_value());
  EXPECT_EQ(w.Reasons(), (std::vector<std::string>{"SearchStarted", "BaseRolledBack"}));
  EXPECT_TRUE(w.events.back().warning);
}

// An operator killed right after a status write (the actions of that pass never carried
// out) resumes from status alone: the same table, the same best. The World keeps nothing
// between passes but the objects, so every pass is a restart as well.
TEST(DriveSearchTest, AnOperatorKilledAfterEveryThirdStatusWriteFindsTheSameBest) {
  World reference;
  reference.RunToEnd();
  World w;
  for (int i = 0; i < 4000 && w.Search().value("phase", "") != kPhaseDone; ++i) {
    w.Pass(i % 3 == 2 ? 0 : SIZE_MAX);
  }
  EXPECT_EQ(Table(w.Search()), Table(reference.Search()));
  EXPECT_EQ(w.Search()["best"], reference.Search()["best"]);
  EXPECT_EQ(*w.TargetTuning(), w.Search()["best"]);
}

TEST(DriveSearchTest, NeverMoreThanTheTotalPlusOnePodsAndNoTrialAgainstAStaleBaseline) {
  World w;
  w.RunToEnd(2000, [&] {
    EXPECT_LE(w.Total(), 3);
    const Json s = w.Search();
    if (s.value("phase", "") == kPhaseSearching && !s["trials"].empty()) {
      const Json& t = s["trials"].back();
      if (!t.contains("result")) {
        EXPECT_EQ(t["baseline"], s["best"]);
      }
    }
  });
  EXPECT_EQ(w.Search().value("phase", ""), kPhaseDone);
}

TEST(DriveSearchTest, ChangingTheSearchStartsItAgainAndRemovingItStopsIt) {
  World w;
  for (int i = 0; i < 200 && w.Search().value("trials", Json::array()).size() < 2; ++i) w.Pass();
  const Json before = w.Search();
  ASSERT_EQ(before.value("phase", ""), kPhaseSearching);
  w.profile()["spec"]["search"]["knobs"] =
      Json::parse(R"([{"knob": "runtime.go.gogc", "values": [400]}])");
  w.Pass();
  Json s = w.Search();
  EXPECT_NE(s["specHash"], before["specHash"]);
  EXPECT_EQ(s["trials"].size(), 1u);
  EXPECT_EQ(s["trials"][0]["value"], "400");
  w.RunToEnd();
  EXPECT_EQ(Table(w.Search()), (std::vector<std::string>{"/runtime/go/gogc=400:Kept"}));

  w.profile()["spec"].erase("search");
  w.Pass();
  s = w.Search();
  EXPECT_EQ(s.value("phase", ""), kPhaseStopped);
  EXPECT_EQ(s["trials"].size(), 1u);  // the table is kept
  // The profile's own (default) tuning goes out as a plain rollout against what the search
  // left on the target (GOGC 400): shown worse, rolled back, and the target keeps GOGC 400.
  for (int i = 0; i < 100 && w.phase() != Phase::kRolledBack; ++i) w.Pass();
  EXPECT_EQ(w.phase(), Phase::kRolledBack);
  EXPECT_EQ((*w.TargetTuning())["runtime"]["go"]["gogc"], "400");
}

TEST(DriveSearchTest, TrialSpecRequiresTheObjectiveToImprove) {
  absl::StatusOr<rollout::ProfileSpec> spec = rollout::ParseSpec(SearchSpecJson());
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->rollout.analysis.on_inconclusive = rollout::InconclusivePolicy::kPromote;
  Json tuning = rollout::TuningToJson(rollout::Tuning{});
  tuning["runtime"]["go"]["gogc"] = "400";
  absl::StatusOr<rollout::ProfileSpec> trial = TrialSpec(*spec, tuning);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->tuning.go.gogc, "400");
  EXPECT_EQ(trial->rollout.analysis.on_inconclusive, rollout::InconclusivePolicy::kRollback);
  ASSERT_EQ(trial->rollout.analysis.metrics.size(), 2u);
  EXPECT_EQ(trial->rollout.analysis.metrics[1].name, "cpuPerRequest");
  EXPECT_EQ(trial->rollout.analysis.metrics[1].min_improvement_percent, 5);
  EXPECT_TRUE(trial->rollout.analysis.metrics[1].required);
  // The guardrail is left as it was.
  EXPECT_FALSE(trial->rollout.analysis.metrics[0].min_improvement_percent.has_value());
  tuning["runtime"]["go"]["gogc"] = "5";
  EXPECT_FALSE(TrialSpec(*spec, tuning).ok());
}

}  // namespace
}  // namespace booster::search
