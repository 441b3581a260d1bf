// ParseSpec's schema and semantic rules, and ParseProfile (spec.h).
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/hash.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/test_specs.h"

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;
using testing::kIssueExample;

Json J(const char* text) { return Json::parse(text); }

TEST(ParseSpecTest, IssueExampleParses) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(kIssueExample));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->target_ref.kind, "Deployment");
  EXPECT_EQ(spec->target_ref.name, "checkout");
  EXPECT_EQ(spec->tuning.placement, CpuPlacement::kWholeCores);
  EXPECT_EQ(spec->tuning.numa, NumaPolicy::kAlign);
  EXPECT_EQ(spec->tuning.sysctls.at("net.core.somaxconn"), "4096");
  EXPECT_EQ(spec->tuning.sysctls.at("net.ipv4.tcp_tw_reuse"), "1");
  EXPECT_EQ(spec->tuning.go.gomaxprocs, "auto");
  EXPECT_EQ(spec->tuning.go.gomemlimit, "auto");
  EXPECT_EQ(spec->tuning.preload.listen_backlog, 4096);
  EXPECT_EQ(spec->tuning.preload.tcp_no_delay, true);
  EXPECT_EQ(spec->tuning.preload.allocator, Allocator::kJemalloc);
  EXPECT_EQ(spec->rollout.steps, (std::vector<int>{10, 50, 100}));
  EXPECT_EQ(spec->rollout.step_duration, absl::Minutes(2));
}

TEST(ParseSpecTest, DefaultsMatchTheCrd) {
  absl::StatusOr<ProfileSpec> spec =
      ParseSpec(J(R"({"targetRef": {"kind": "Deployment", "name": "web"}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->rollout.steps, (std::vector<int>{10, 50, 100}));
  EXPECT_EQ(spec->rollout.step_duration, absl::Minutes(2));
  EXPECT_EQ(spec->rollout.progress_deadline, absl::Minutes(10));
  EXPECT_FALSE(spec->rollout.paused);
  EXPECT_EQ(spec->rollout.hpa_policy, HpaPolicy::kFollow);
  EXPECT_EQ(spec->rollout.on_new_revision, NewRevisionPolicy::kRestart);
  EXPECT_EQ(spec->rollout.analysis.mode, AnalysisMode::kMetrics);
  ASSERT_EQ(spec->rollout.analysis.metrics.size(), DefaultMetrics().size());
  for (size_t i = 0; i < DefaultMetrics().size(); ++i) {
    EXPECT_EQ(spec->rollout.analysis.metrics[i].name, DefaultMetrics()[i].name);
    EXPECT_EQ(spec->rollout.analysis.metrics[i].max_regression_percent,
              DefaultMetrics()[i].max_regression_percent);
    EXPECT_EQ(spec->rollout.analysis.metrics[i].required, DefaultMetrics()[i].required);
  }
  EXPECT_EQ(spec->rollout.analysis.max_extensions, 2);
  EXPECT_EQ(spec->rollout.analysis.min_samples, 10);
  EXPECT_EQ(spec->rollout.analysis.on_inconclusive, InconclusivePolicy::kRollback);
  EXPECT_FALSE(spec->rollout.analysis.dry_run);
  EXPECT_EQ(spec->tuning.placement, CpuPlacement::kNone);
  EXPECT_EQ(spec->tuning.preload.allocator, Allocator::kDefault);
  EXPECT_TRUE(spec->tuning.sysctls.empty());
}

TEST(ParseSpecTest, IntegerSysctlValuesAndGoKnobsAreNormalised) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(R"({
    "targetRef": {"kind": "Deployment", "name": "web"},
    "tuning": {"sysctls": {"net.ipv4.tcp_fin_timeout": 15,
                           "net.ipv4.ip_local_port_range": " 10000 60999 "},
               "runtime": {"go": {"gomaxprocs": 4, "gomemlimit": "85%", "gogc": "off"}}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->tuning.sysctls.at("net.ipv4.tcp_fin_timeout"), "15");
  EXPECT_EQ(spec->tuning.sysctls.at("net.ipv4.ip_local_port_range"), "10000 60999");
  EXPECT_EQ(spec->tuning.go.gomaxprocs, "4");
  EXPECT_EQ(spec->tuning.go.gomemlimit, "85%");
  EXPECT_EQ(spec->tuning.go.gogc, "off");
}

struct BadSpec {
  const char* name;
  const char* spec;
  const char* message;  // a substring the user must see
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, IsRejectedWithAnActionableMessage) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(GetParam().spec));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr(GetParam().message));
}

#define TARGET R"("targetRef": {"kind": "Deployment", "name": "web"})"

INSTANTIATE_TEST_SUITE_P(
    Rules, BadSpecTest,
    ::testing::Values(
        BadSpec{"NoTargetRef", R"({})", "spec.targetRef: is required"},
        BadSpec{"NotAnObject", R"([])", "spec: must be an object"},
        BadSpec{"WrongKind", R"({"targetRef": {"kind": "StatefulSet", "name": "db"}})",
                "spec.targetRef.kind: unsupported value \"StatefulSet\"; use one of Deployment"},
        BadSpec{"NoName", R"({"targetRef": {"kind": "Deployment"}})",
                "spec.targetRef.name: is required"},
        BadSpec{"BadName", R"({"targetRef": {"kind": "Deployment", "name": "Web_1"}})",
                "is not a valid Deployment name"},
        BadSpec{"UnknownContainer",
                R"({"targetRef": {"kind": "Deployment", "name": "web", "containers": ["a", "a"]}})",
                "lists \"a\" twice"},
        BadSpec{"UnknownField", R"({)" TARGET R"(, "tunning": {}})", "spec.tunning: unknown field"},
        BadSpec{"NotificationProvider",
                R"({)" TARGET R"(, "notifications": [{"provider": "pager", "secretRef": {"name": "h"}}]})",
                "spec.notifications[0].provider: \"pager\" is not one of slack, teams, webhook"},
        BadSpec{"Placement", R"({)" TARGET R"(, "tuning": {"cpu": {"placement": "cores"}}})",
                "spec.tuning.cpu.placement: unsupported value \"cores\"; use one of none, "
                "spread, whole-cores, pinned"},
        BadSpec{"NumaWithoutPlacement", R"({)" TARGET R"(, "tuning": {"cpu": {"numa": "bind"}}})",
                "spec.tuning.cpu.numa: bind needs a CPU placement"},
        BadSpec{"HostWideSysctl",
                R"({)" TARGET R"(, "tuning": {"sysctls": {"net.core.rmem_max": "1"}}})",
                "spec.tuning.sysctls[net.core.rmem_max]: is not a namespaced sysctl"},
        BadSpec{"SlashSysctl",
                R"({)" TARGET R"(, "tuning": {"sysctls": {"net/core/somaxconn": "1"}}})",
                "with dots"},
        BadSpec{"SysctlRange",
                R"({)" TARGET R"(, "tuning": {"sysctls": {"net.ipv4.tcp_tw_reuse": "3"}}})",
                "\"3\" must be from 0 to 2"},
        BadSpec{"SysctlPair",
                R"({)" TARGET
                R"(, "tuning": {"sysctls": {"net.ipv4.ip_local_port_range": "60000 1024"}}})",
                "low <= high"},
        BadSpec{"SysctlType",
                R"({)" TARGET R"(, "tuning": {"sysctls": {"net.core.somaxconn": true}}})",
                "value must be a string or an integer"},
        BadSpec{"CongestionControl",
                R"({)" TARGET
                R"(, "tuning": {"sysctls": {"net.ipv4.tcp_congestion_control": "vegas"}}})",
                "must be one of cubic, reno, bbr"},
        BadSpec{"Gomaxprocs",
                R"({)" TARGET R"(, "tuning": {"runtime": {"go": {"gomaxprocs": 0}}}})",
                "gomaxprocs: must be \"auto\" or an integer from 1 to 1024"},
        BadSpec{"Gomemlimit",
                R"({)" TARGET R"(, "tuning": {"runtime": {"go": {"gomemlimit": "1GB"}}}})",
                "is not \"auto\", a percentage"},
        BadSpec{"Gogc", R"({)" TARGET R"(, "tuning": {"runtime": {"go": {"gogc": 5}}}})",
                "gogc: must be \"off\" or an integer from 10 to 10000"},
        BadSpec{"Backlog",
                R"({)" TARGET R"(, "tuning": {"runtime": {"preload": {"listenBacklog": 0}}}})",
                "listenBacklog: must be between 1 and 65535, got 0"},
        BadSpec{"BacklogAboveSomaxconn",
                R"({)" TARGET R"(, "tuning": {"sysctls": {"net.core.somaxconn": 1024},
                   "runtime": {"preload": {"listenBacklog": 4096}}}})",
                "4096 exceeds net.core.somaxconn (1024)"},
        BadSpec{"NoDelayType",
                R"({)" TARGET R"(, "tuning": {"runtime": {"preload": {"tcpNoDelay": "yes"}}}})",
                "tcpNoDelay: must be true or false"},
        BadSpec{"Allocator",
                R"({)" TARGET R"(, "tuning": {"runtime": {"preload": {"allocator": "hoard"}}}})",
                "use one of default, jemalloc, mimalloc, tcmalloc"},
        BadSpec{"StepsDescend", R"({)" TARGET R"(, "rollout": {"steps": [50, 10, 100]}})",
                "must strictly ascend, but 10 follows 50"},
        BadSpec{"StepsRepeat", R"({)" TARGET R"(, "rollout": {"steps": [10, 10, 100]}})",
                "must strictly ascend"},
        BadSpec{"StepsEnd", R"({)" TARGET R"(, "rollout": {"steps": [10, 50]}})",
                "must end at 100"},
        BadSpec{"StepsEmpty", R"({)" TARGET R"(, "rollout": {"steps": []}})",
                "between 1 and 20 entries"},
        BadSpec{"StepRange", R"({)" TARGET R"(, "rollout": {"steps": [0, 100]}})",
                "entry 0 is not a percentage from 1 to 100"},
        BadSpec{"StepFraction", R"({)" TARGET R"(, "rollout": {"steps": [12.5, 100]}})",
                "entry 12.5 is not a percentage"},
        BadSpec{"Duration", R"({)" TARGET R"(, "rollout": {"stepDuration": "2 minutes"}})",
                "\"2 minutes\" is not a duration; write e.g. 30s, 2m"},
        BadSpec{"DurationDays", R"({)" TARGET R"(, "rollout": {"stepDuration": "1d"}})",
                "is not a duration"},
        BadSpec{"DurationRange", R"({)" TARGET R"(, "rollout": {"stepDuration": "25h"}})",
                "stepDuration: must be between 1s and 24h"},
        BadSpec{"Deadline", R"({)" TARGET R"(, "rollout": {"progressDeadline": "5s"}})",
                "progressDeadline: must be between 10s and 24h"},
        BadSpec{"HpaPolicy", R"({)" TARGET R"(, "rollout": {"hpaPolicy": "Ignore"}})",
                "use one of Follow, Pause, Fixed"},
        BadSpec{"OnNewRevision", R"({)" TARGET R"(, "rollout": {"onNewRevision": "Ignore"}})",
                "use one of Restart, Rollback, Reverify"},
        BadSpec{"MetricsModeWithNoMetric",
                R"({)" TARGET R"(, "rollout": {"analysis": {"mode": "Metrics", "metrics": []}}})",
                "mode Metrics needs at least one metric, e.g. [{name: latencyP99}]; leave "
                "metrics out for the default set"},
        BadSpec{"MetricName",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "p99"}]}}})",
                "unsupported value \"p99\""},
        BadSpec{"PrometheusWithoutDirection",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "checkout",
                   "prometheus": {"query": "sum(up) + 0"}}]}}})",
                "direction: is required with prometheus: LowerIsBetter or HigherIsBetter"},
        BadSpec{"DirectionOfAnAgentMetric",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "latencyP99",
                   "direction": "HigherIsBetter"}]}}})",
                "direction: is only for a prometheus metric"},
        BadSpec{"PrometheusNamedLikeAnAgentMetric",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "latencyP99",
                   "direction": "LowerIsBetter", "prometheus": {"query": "sum(up) + 0"}}]}}})",
                "\"latencyP99\" is one of the agent's metrics; a prometheus metric needs a "
                "name of its own"},
        BadSpec{"PrometheusName",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "p-99",
                   "direction": "LowerIsBetter", "prometheus": {"query": "sum(up) + 0"}}]}}})",
                "\"p-99\" is not a metric name"},
        BadSpec{"PrometheusUnknownPlaceholder",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "checkout",
                   "direction": "LowerIsBetter",
                   "prometheus": {"query": "up{pod=~\"{{pod}}\"}"}}]}}})",
                "prometheus.query: unknown placeholder {{pod}}"},
        BadSpec{"PrometheusEmptyQuery",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "checkout",
                   "direction": "LowerIsBetter", "prometheus": {"query": ""}}]}}})",
                "prometheus.query"},
        BadSpec{"PrometheusUnknownKey",
                R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [{"name": "checkout",
                   "direction": "LowerIsBetter", "prometheus": {"query": "sum(up) + 0",
                   "address": "http://p"}}]}}})",
                "address"},
        BadSpec{"MetricTwice", R"({)" TARGET R"(, "rollout": {"analysis": {"metrics": [
                   {"name": "latencyP99"}, {"name": "latencyP99"}]}}})",
                "metric latencyP99 is listed twice"},
        BadSpec{"IntervalLongerThanStep", R"({)" TARGET R"(, "rollout": {"stepDuration": "30s",
                   "analysis": {"interval": "1m"}}})",
                "a step would end before its first window"},
        BadSpec{"Confidence", R"({)" TARGET R"(, "rollout": {"analysis": {"confidence": 1.5}}})",
                "confidence: must be between 0.5 and 0.9999"},
        BadSpec{"SourcePort",
                R"({)" TARGET R"(, "rollout": {"analysis": {"source": {"port": 0}}}})",
                "spec.rollout.analysis.source.port: must be between 1 and 65535"},
        BadSpec{"SourcePath",
                R"({)" TARGET R"(, "rollout": {"analysis": {"source": {"path": "metrics"}}}})",
                "source.path: must start with '/'"},
        BadSpec{"SourceHistogramName", R"({)" TARGET R"(, "rollout": {"analysis": {"source":
                   {"latencyHistogram": "http-latency"}}}})",
                "source.latencyHistogram: must be a Prometheus metric name"},
        BadSpec{"SourceErrorMatch", R"({)" TARGET R"(, "rollout": {"analysis": {"source":
                   {"errorMatch": "5(("}}}})",
                "source.errorMatch: is not a regular expression"},
        BadSpec{"SourceUnknownKey",
                R"({)" TARGET R"(, "rollout": {"analysis": {"source": {"url": "http://x"}}}})",
                "source"}),
    [](const ::testing::TestParamInfo<BadSpec>& param_info) {
      return std::string(param_info.param.name);
    });

// Notifications are the notifier's (operator/notify): checked here, but no part of the
// rollout, so editing them restarts nothing.
TEST(ParseSpecTest, NotificationsAreCheckedAndChangeNoHash) {
  Json with = J(kIssueExample);
  absl::StatusOr<ProfileSpec> plain = ParseSpec(with);
  ASSERT_TRUE(plain.ok()) << plain.status();
  with["notifications"] = J(R"([{"provider": "slack", "secretRef": {"name": "chat"}},
                                {"name": "ops", "provider": "webhook",
                                 "secretRef": {"name": "hooks", "key": "url"},
                                 "events": ["StepVerdict", "RolledBack"]}])");
  absl::StatusOr<ProfileSpec> notified = ParseSpec(with);
  ASSERT_TRUE(notified.ok()) << notified.status();
  EXPECT_EQ(RolloutHash(*plain), RolloutHash(*notified));
  EXPECT_EQ(ExperimentHash(*plain), ExperimentHash(*notified));
}

TEST(ParseSpecTest, APrometheusMetricHasItsQueryAndDirection) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(R"({)" TARGET R"x(, "rollout": {"analysis": {
      "metrics": [{"name": "latencyP99"},
                  {"name": "checkout_rate", "direction": "HigherIsBetter",
                   "maxRegressionPercent": 20,
                   "prometheus": {"query": "sum(rate(orders_total{pod=~\"{{pods}}\"}[{{window}}]))"}}]}}})x"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<MetricSpec>& m = spec->rollout.analysis.metrics;
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].prometheus_query, "");
  EXPECT_EQ(m[0].direction, std::nullopt);
  EXPECT_EQ(DirectionOf(m[0]), Direction::kLowerIsBetter);
  EXPECT_EQ(m[1].name, "checkout_rate");
  EXPECT_EQ(m[1].prometheus_query, R"(sum(rate(orders_total{pod=~"{{pods}}"}[{{window}}])))");
  EXPECT_EQ(DirectionOf(m[1]), Direction::kHigherIsBetter);
  EXPECT_EQ(m[1].max_regression_percent, 20);
}

TEST(ParseSpecTest, AnalysisSourceKeepsOnlyWhatIsGiven) {
  absl::StatusOr<ProfileSpec> none = ParseSpec(J(R"({)" TARGET R"(})"));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->rollout.analysis.source, Json::object());
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(R"({)" TARGET R"(, "rollout": {"analysis": {
      "source": {"port": 8080, "latencyHistogram": "rpc_latency_seconds",
                 "errorLabel": "grpc_code", "errorMatch": "Internal|Unavailable"}}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->rollout.analysis.source,
            J(R"({"port": 8080, "latencyHistogram": "rpc_latency_seconds",
                  "errorLabel": "grpc_code", "errorMatch": "Internal|Unavailable"})"));
}

TEST(ParseSpecTest, ReportsEveryProblemAtOnce) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(J(R"({
    "targetRef": {"kind": "Deployment", "name": "web"},
    "tuning": {"sysctls": {"vm.swappiness": "10"}},
    "rollout": {"steps": [10, 50], "stepDuration": "soon"}})"));
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("vm.swappiness"));
  EXPECT_THAT(msg, HasSubstr("must end at 100"));
  EXPECT_THAT(msg, HasSubstr("\"soon\" is not a duration"));
}

TEST(ParseSpecTest, ShortStepShrinksTheDefaultWindow) {
  absl::StatusOr<ProfileSpec> spec =
      ParseSpec(J(R"({"targetRef": {"kind": "Deployment", "name": "web"},
           "rollout": {"stepDuration": "5s"}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->rollout.analysis.interval, absl::Seconds(5));
  // Also when an analysis is given without an interval (the CRD sets no default for it).
  spec = ParseSpec(J(R"({"targetRef": {"kind": "Deployment", "name": "web"},
           "rollout": {"stepDuration": "10s", "analysis": {"mode": "Time"}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->rollout.analysis.interval, absl::Seconds(10));
  // An interval given longer than the step is still refused.
  EXPECT_FALSE(ParseSpec(J(R"({"targetRef": {"kind": "Deployment", "name": "web"},
           "rollout": {"stepDuration": "10s", "analysis": {"interval": "30s"}}})"))
                   .ok());
}

TEST(ParseSpecTest, OnNewRevisionTakesEachPolicy) {
  for (const auto& [text, policy] : {std::pair{"Restart", NewRevisionPolicy::kRestart},
                                     std::pair{"Rollback", NewRevisionPolicy::kRollback},
                                     std::pair{"Reverify", NewRevisionPolicy::kReverify}}) {
    absl::StatusOr<ProfileSpec> spec = ParseSpec(Json::parse(absl::StrCat(
        R"({"targetRef": {"kind": "Deployment", "name": "web"}, "rollout": {"onNewRevision": ")",
        text, R"("}})")));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->rollout.on_new_revision, policy) << text;
  }
}

TEST(ParseSpecTest, DryRunIsABooleanAndNothingElse) {
  auto parse = [](const char* value) {
    return ParseSpec(Json::parse(absl::StrCat(
        R"({"targetRef": {"kind": "Deployment", "name": "web"}, "rollout": {"analysis": )",
        R"({"dryRun": )", value, "}}}")));
  };
  for (const auto& [text, want] : {std::pair{"true", true}, std::pair{"false", false}}) {
    absl::StatusOr<ProfileSpec> spec = parse(text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->rollout.analysis.dry_run, want) << text;
  }
  for (const char* bad : {R"("true")", "1"}) {
    absl::StatusOr<ProfileSpec> spec = parse(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_THAT(spec.status().message(),
                HasSubstr("spec.rollout.analysis.dryRun: must be true or false"))
        << bad;
  }
  // A misspelling is an unknown field, as anywhere else in the spec.
  absl::StatusOr<ProfileSpec> typo = ParseSpec(J(R"({"targetRef": {"kind": "Deployment",
      "name": "web"}, "rollout": {"analysis": {"dryrun": true}}})"));
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.status().message(),
              HasSubstr("spec.rollout.analysis.dryrun: unknown field; known fields are mode, "
                        "interval, warmup, minSamples, confidence, maxExtensions, "
                        "onInconclusive, dryRun, baseline, metrics, source"));
}

TEST(ParseSpecTest, BaselineIsFreshByDefaultOrTarget) {
  auto parse = [](const std::string& analysis) {
    return ParseSpec(Json::parse(absl::StrCat(
        R"({"targetRef": {"kind": "Deployment", "name": "web"}, "rollout": {"analysis": )",
        analysis, "}}")));
  };
  absl::StatusOr<ProfileSpec> plain = parse("{}");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rollout.analysis.baseline, BaselinePolicy::kFresh);
  absl::StatusOr<ProfileSpec> target = parse(R"({"baseline": "Target"})");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->rollout.analysis.baseline, BaselinePolicy::kTarget);
  absl::StatusOr<ProfileSpec> fresh = parse(R"({"baseline": "Fresh"})");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->rollout.analysis.baseline, BaselinePolicy::kFresh);
  absl::StatusOr<ProfileSpec> bad = parse(R"({"baseline": "fresh"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spec.rollout.analysis.baseline"));
  EXPECT_THAT(bad.status().message(), HasSubstr("Fresh"));
}

TEST(ParseProfileTest, ReadsMetadataAndKeepsABadSpecAsAnError) {
  absl::StatusOr<Profile> p = ParseProfile(J(R"({
    "apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
    "metadata": {"name": "checkout", "namespace": "shop", "uid": "u1", "generation": 3,
                 "annotations": {"booster.dev/abort": "now"},
                 "finalizers": ["booster.dev/finalizer"],
                 "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"targetRef": {"kind": "Deployment"}},
    "status": {"phase": "Progressing", "currentStep": 1}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->meta.name, "checkout");
  EXPECT_EQ(p->meta.namespace_, "shop");
  EXPECT_EQ(p->meta.generation, 3);
  EXPECT_EQ(p->meta.annotations.at(kAnnotationAbort), "now");
  EXPECT_EQ(p->meta.finalizers, std::vector<std::string>{kFinalizer});
  EXPECT_TRUE(p->meta.deleting);
  EXPECT_FALSE(p->spec.ok());
  EXPECT_THAT(std::string(p->spec.status().message()), HasSubstr("spec.targetRef.name"));
  EXPECT_EQ(p->status.phase, Phase::kProgressing);
}

TEST(ParseProfileTest, RejectsOtherObjects) {
  EXPECT_FALSE(ParseProfile(J(R"({"kind": "Deployment", "metadata": {"name": "x"}})")).ok());
  EXPECT_FALSE(ParseProfile(J(R"({"kind": "BoosterProfile", "metadata": {}})")).ok());
  EXPECT_FALSE(ParseProfile(J("[1]")).ok());
  absl::StatusOr<Profile> no_spec = ParseProfile(J(R"({"metadata": {"name": "x"}})"));
  ASSERT_TRUE(no_spec.ok());
  EXPECT_THAT(std::string(no_spec->spec.status().message()), HasSubstr("spec: is required"));
}

}  // namespace
}  // namespace booster::rollout
