// Shared analysis templates: the reference, the merge, the resolution (analysis_template.h).
#include "operator/rollout/profile/analysis_template.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;

Json J(const char* text) { return Json::parse(text); }

Json ProfileWith(const Json& analysis) {
  Json p = J(R"({"apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
                 "metadata": {"name": "web", "namespace": "shop"},
                 "spec": {"targetRef": {"kind": "Deployment", "name": "web"},
                          "rollout": {"steps": [50, 100], "stepDuration": "5m"}}})");
  p["spec"]["rollout"]["analysis"] = analysis;
  return p;
}

const char* kSlo = R"({"interval": "15s", "minSamples": 8, "confidence": 0.99,
  "source": {"port": 9090, "requestCounter": "http_requests_total"},
  "metrics": [{"name": "latencyP99", "maxRegressionPercent": 5},
              {"name": "errorRate", "maxRegressionPercent": 0}]})";

TEST(AnalysisTemplateTest, TheProfilesFieldsWinMetricsByNameSourceByKey) {
  absl::StatusOr<Json> m = MergeAnalysis(J(kSlo), J(R"({
      "templateRef": {"name": "slo"}, "minSamples": 4,
      "source": {"path": "/stats"},
      "metrics": [{"name": "latencyP99", "maxRegressionPercent": 10},
                  {"name": "throughput", "maxRegressionPercent": 3, "required": false}]})"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, J(R"({"interval": "15s", "minSamples": 4, "confidence": 0.99,
      "source": {"port": 9090, "requestCounter": "http_requests_total", "path": "/stats"},
      "metrics": [{"name": "latencyP99", "maxRegressionPercent": 10},
                  {"name": "errorRate", "maxRegressionPercent": 0},
                  {"name": "throughput", "maxRegressionPercent": 3, "required": false}]})"));
}

TEST(AnalysisTemplateTest, AFieldTheTemplateLacksIsTakenAsWritten) {
  absl::StatusOr<Json> m = MergeAnalysis(J(R"({"minSamples": 8})"),
                                         J(R"({"metrics": [{"name": "errorRate"}], "dryRun": true})"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, J(R"({"minSamples": 8, "metrics": [{"name": "errorRate"}], "dryRun": true})"));
}

TEST(AnalysisTemplateTest, ATemplateNamingATemplateIsRefused) {
  absl::StatusOr<Json> m = MergeAnalysis(J(R"({"templateRef": {"name": "x"}})"), J("{}"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("cannot name another template"));
}

TEST(AnalysisTemplateTest, TheReferenceDefaultsToTheNamespacedKind) {
  absl::StatusOr<std::optional<AnalysisTemplateRef>> r =
      AnalysisTemplateRefOf(ProfileWith(J(R"({"templateRef": {"name": "slo"}})")));
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->kind, kAnalysisTemplateKind);
  EXPECT_EQ((*r)->name, "slo");
  EXPECT_FALSE(AnalysisTemplateRefOf(ProfileWith(J(R"({"minSamples": 3})")))->has_value());
  r = AnalysisTemplateRefOf(ProfileWith(J(R"({"templateRef": {"kind": "Other", "name": "x"}})")));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("templateRef.kind"));
  r = AnalysisTemplateRefOf(ProfileWith(J(R"({"templateRef": {}})")));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("templateRef.name"));
}

struct Templates {
  std::map<std::string, Json> objects;  // "kind/ns/name"; a cluster template has ns ""
  AnalysisTemplateLookup Lookup() const {
    return [this](const AnalysisTemplateRef& ref,
                  const std::string& ns) -> std::shared_ptr<const Json> {
      const std::string key = ref.kind + "/" +
                              (ref.kind == kClusterAnalysisTemplateKind ? "" : ns) + "/" +
                              ref.name;
      auto it = objects.find(key);
      return it == objects.end() ? nullptr : std::make_shared<const Json>(it->second);
    };
  }
};

Json TemplateObject(const char* kind, int64_t generation, const Json& analysis) {
  Json t = {{"kind", kind}, {"metadata", {{"name", "slo"}, {"generation", generation}}}};
  t["spec"]["analysis"] = analysis;
  return t;
}

TEST(AnalysisTemplateTest, AClusterTemplateIsMergedParsedAndRecorded) {
  Templates t;
  t.objects["BoosterClusterAnalysisTemplate//slo"] =
      TemplateObject("BoosterClusterAnalysisTemplate", 3, J(kSlo));
  const Json profile = ProfileWith(J(R"({
      "templateRef": {"kind": "BoosterClusterAnalysisTemplate", "name": "slo"},
      "metrics": [{"name": "errorRate", "maxRegressionPercent": 1}]})"));
  ResolvedProfile r = ResolveAnalysisTemplate(profile, t.Lookup());
  ASSERT_TRUE(r.error.ok()) << r.error;
  ASSERT_TRUE(r.used.has_value());
  EXPECT_EQ(*r.used, (AnalysisTemplateStatus{"BoosterClusterAnalysisTemplate", "slo", 3}));
  absl::StatusOr<Profile> p = ParseProfile(r.ToParse(profile));
  ASSERT_TRUE(p.ok() && p->spec.ok()) << (p.ok() ? p->spec.status() : p.status());
  const AnalysisSpec& a = p->spec->rollout.analysis;
  EXPECT_EQ(a.interval, absl::Seconds(15));
  EXPECT_EQ(a.min_samples, 8);
  EXPECT_DOUBLE_EQ(a.confidence, 0.99);
  ASSERT_EQ(a.metrics.size(), 2u);
  EXPECT_EQ(a.metrics[1].name, "errorRate");
  EXPECT_DOUBLE_EQ(a.metrics[1].max_regression_percent, 1);
  EXPECT_EQ(a.source["port"], 9090);
  // The profile's own object is untouched.
  EXPECT_TRUE(profile["spec"]["rollout"]["analysis"].contains("templateRef"));
}

TEST(AnalysisTemplateTest, ANamespacedTemplateIsLookedUpInTheProfilesNamespace) {
  Templates t;
  t.objects["BoosterAnalysisTemplate/other/slo"] =
      TemplateObject("BoosterAnalysisTemplate", 1, J(kSlo));
  const Json profile = ProfileWith(J(R"({"templateRef": {"name": "slo"}})"));
  ResolvedProfile r = ResolveAnalysisTemplate(profile, t.Lookup());
  ASSERT_FALSE(r.error.ok());
  EXPECT_THAT(r.error.message(),
              HasSubstr("BoosterAnalysisTemplate \"slo\" in namespace \"shop\" not found"));
  EXPECT_FALSE(r.used.has_value());
  EXPECT_FALSE(r.merged.has_value());
  EXPECT_EQ(r.ToParse(profile), profile);
  t.objects["BoosterAnalysisTemplate/shop/slo"] =
      TemplateObject("BoosterAnalysisTemplate", 2, J(R"({"minSamples": 5})"));
  r = ResolveAnalysisTemplate(profile, t.Lookup());
  ASSERT_TRUE(r.error.ok()) << r.error;
  ASSERT_TRUE(r.merged.has_value());
  EXPECT_EQ(r.ToParse(profile)["spec"]["rollout"]["analysis"], J(R"({"minSamples": 5})"));
  EXPECT_EQ(r.used->generation, 2);
}

TEST(AnalysisTemplateTest, ATemplateWithoutAnAnalysisIsReported) {
  Templates t;
  t.objects["BoosterClusterAnalysisTemplate//slo"] = J(R"({"metadata": {"name": "slo"}})");
  ResolvedProfile r = ResolveAnalysisTemplate(
      ProfileWith(J(R"({"templateRef": {"kind": "BoosterClusterAnalysisTemplate", "name": "slo"}})")),
      t.Lookup());
  ASSERT_FALSE(r.error.ok());
  EXPECT_THAT(r.error.message(), HasSubstr("has an empty spec.analysis"));
}

TEST(AnalysisTemplateTest, AProfileWithoutATemplateIsItself) {
  const Json profile = ProfileWith(J(R"({"minSamples": 3})"));
  ResolvedProfile r = ResolveAnalysisTemplate(profile, nullptr);
  EXPECT_TRUE(r.error.ok());
  EXPECT_FALSE(r.used.has_value());
  EXPECT_FALSE(r.merged.has_value());
  EXPECT_EQ(r.ToParse(profile), profile);
}

}  // namespace
}  // namespace booster::rollout
