// spec.search's reader (search_spec.h), through ParseSpec as the operator reads a profile.
#include "operator/rollout/profile/search_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ProfileSpec> Parse(const std::string& search, const std::string& tuning = "{}",
                                  const std::string& analysis = "{}") {
  return ParseSpec(Json::parse(R"({"targetRef": {"kind": "Deployment", "name": "web"},
      "tuning": )" + tuning + R"(, "rollout": {"analysis": )" + analysis +
                               R"(}, "search": )" + search + "}"));
}

TEST(SearchSpecTest, ReadsKnobsAsPointersWithCanonicalValues) {
  absl::StatusOr<ProfileSpec> spec = Parse(R"({"objective": "cpuPerRequest",
      "minImprovementPercent": 3, "maxTrials": 4,
      "knobs": [{"knob": "runtime.go.gogc", "values": [200, "400", "off"]},
                {"sysctl": "net.core.somaxconn", "values": [4096]},
                {"knob": "runtime.preload.allocator", "values": ["jemalloc", "mimalloc"]}]})",
                                           R"({"runtime": {"go": {"gomemlimit": "auto"}}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->search.has_value());
  const SearchSpec& s = *spec->search;
  EXPECT_EQ(s.objective, "cpuPerRequest");
  EXPECT_DOUBLE_EQ(s.min_improvement_percent, 3);
  EXPECT_EQ(s.max_trials, 4);
  ASSERT_EQ(s.knobs.size(), 3u);
  EXPECT_EQ(s.knobs[0].path, "/runtime/go/gogc");
  EXPECT_EQ(s.knobs[0].knob, "runtime.go.gogc");
  // As TuningToJson writes them (the agent's environment): strings.
  EXPECT_EQ(Json(s.knobs[0].values), Json::parse(R"(["200", "400", "off"])"));
  EXPECT_EQ(s.knobs[1].path, "/sysctls/net.core.somaxconn");
  EXPECT_EQ(s.knobs[1].knob, "sysctl net.core.somaxconn");
  EXPECT_EQ(Json(s.knobs[1].values), Json::parse(R"(["4096"])"));
  EXPECT_EQ(SearchKnobName(s.knobs[1].path), "sysctl net.core.somaxconn");
  EXPECT_EQ(SearchKnobName(s.knobs[0].path), "runtime.go.gogc");
}

TEST(SearchSpecTest, DefaultsAndNoSearch) {
  absl::StatusOr<ProfileSpec> spec =
      Parse(R"({"objective": "latencyP99", "knobs": [{"knob": "cpu.placement",
               "values": ["spread"]}]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_DOUBLE_EQ(spec->search->min_improvement_percent, 5);
  EXPECT_EQ(spec->search->max_trials, 8);
  absl::StatusOr<ProfileSpec> none =
      ParseSpec(Json::parse(R"({"targetRef": {"kind": "Deployment", "name": "web"}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->search.has_value());
}

// Each row: a search (and tuning, analysis) and what the error must say.
TEST(SearchSpecTest, RefusesWhatCannotRunWithAnActionableMessage) {
  struct Row {
    std::string search, tuning, analysis, says;
  };
  const Row rows[] = {
      {R"({"knobs": [{"knob": "cpu.placement", "values": ["spread"]}]})", "{}", "{}",
       "spec.search.objective: is required"},
      {R"({"objective": "p99", "knobs": [{"knob": "cpu.placement", "values": ["spread"]}]})",
       "{}", "{}", "spec.search.objective"},
      {R"({"objective": "latencyP99"})", "{}", "{}", "spec.search.knobs: is required"},
      {R"({"objective": "latencyP99", "knobs": []})", "{}", "{}", "1 to 16 knobs"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gc", "values": [1]}]})",
       "{}", "{}", "spec.search.knobs[0].knob"},
      {R"({"objective": "latencyP99", "knobs": [{"values": [1]}]})", "{}", "{}",
       "exactly one of knob"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc",
          "sysctl": "net.core.somaxconn", "values": [200]}]})", "{}", "{}",
       "exactly one of knob"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc", "values": []}]})",
       "{}", "{}", "spec.search.knobs[0].values: must be a list of 1 to 16"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc", "values": [5]}]})",
       "{}", "{}", "spec.search.knobs[0].values[0]: 5 makes no valid tuning"},
      {R"({"objective": "latencyP99", "knobs": [{"sysctl": "vm.swappiness", "values": [1]}]})",
       "{}", "{}", "spec.search.knobs[0].values[0]: 1 makes no valid tuning: spec.tuning.sysctls[vm.swappiness]"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc",
          "values": ["off"]}]})", "{}", "{}", "GOGC off without a GOMEMLIMIT"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc",
          "values": [200, "200"]}]})", "{}", "{}", "values[1]: \"200\" is listed twice"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc", "values": [200]},
          {"knob": "runtime.go.gogc", "values": [400]}]})", "{}", "{}",
       "spec.search.knobs[1]: runtime.go.gogc is listed twice"},
      {R"({"objective": "latencyP99", "maxTrials": 0, "knobs": [{"knob": "runtime.go.gogc",
          "values": [200]}]})", "{}", "{}", "spec.search.maxTrials"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc", "values": [200]}]})",
       "{}", R"({"mode": "Time"})", "needs spec.rollout.analysis.mode Metrics"},
      {R"({"objective": "latencyP99", "knobs": [{"knob": "runtime.go.gogc", "values": [200]}]})",
       "{}", R"({"dryRun": true})", "cannot run with spec.rollout.analysis.dryRun"},
      {R"({"objective": "latencyP99", "extra": 1, "knobs": [{"knob": "runtime.go.gogc",
          "values": [200]}]})", "{}", "{}", "spec.search.extra: unknown field"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<ProfileSpec> spec = Parse(row.search, row.tuning, row.analysis);
    ASSERT_FALSE(spec.ok()) << row.search;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(row.says)) << row.search;
  }
}

}  // namespace
}  // namespace booster::rollout
