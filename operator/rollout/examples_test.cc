// The YAML a user applies, read as the API server would hand it to the operator: every
// example in examples/ passes the operator's validation; every profile in
// crds/testdata/invalid/ (which the API server rejects) is rejected by the operator too, so
// the two rule sets agree; every profile in crds/testdata/semantic/ (which the API server
// accepts) is rejected by the operator with the message its "# operator:" line names.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/analysis_template.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/spec.h"
#include "yaml-cpp/yaml.h"

namespace booster::rollout {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// YAML 1.2 core schema, as the API server reads manifests: quoted scalars stay strings.
Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json j = Json::object();
      for (const auto& kv : n) j[kv.first.as<std::string>()] = ToJson(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      Json j = Json::array();
      for (const auto& e : n) j.push_back(ToJson(e));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      Json number = Json::parse(s, nullptr, /*allow_exceptions=*/false);
      if (!number.is_discarded() && number.is_number()) return number;
      return s;
    }
    default:
      return nullptr;
  }
}

fs::path Root() {
  const char* dir = std::getenv("BOOSTER_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::path(".");
}

std::vector<fs::path> Files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string CommentValue(const fs::path& file, const std::string& prefix) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

// The profiles of a file (one or more documents), each with the analysis templates of the
// same file merged in as the operator merges them (analysis_template.h). A file that holds
// only templates yields one profile naming each, so a bad template shows as a bad profile.
std::vector<absl::StatusOr<Profile>> Load(const fs::path& file) {
  std::vector<Json> profiles, templates;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(file.string())) {
    Json j = ToJson(doc);
    if (j.is_null()) continue;
    (j.value("kind", "") == kKind ? profiles : templates).push_back(std::move(j));
  }
  if (profiles.empty()) {
    for (const Json& t : templates) {
      profiles.push_back({{"kind", kKind},
                          {"metadata", {{"name", "uses-template"}, {"namespace", "ns"}}},
                          {"spec",
                           {{"targetRef", {{"kind", "Deployment"}, {"name", "web"}}},
                            {"rollout",
                             {{"analysis",
                               {{"templateRef",
                                 {{"kind", t["kind"]}, {"name", t["metadata"]["name"]}}}}}}}}}});
    }
  }
  AnalysisTemplateLookup lookup = [&](const AnalysisTemplateRef& ref,
                                      const std::string&) -> std::shared_ptr<const Json> {
    for (const Json& t : templates) {
      if (t.value("kind", "") == ref.kind && t["metadata"].value("name", "") == ref.name) {
        return std::make_shared<const Json>(t);
      }
    }
    return nullptr;
  };
  std::vector<absl::StatusOr<Profile>> out;
  for (const Json& p : profiles) {
    ResolvedProfile r = ResolveAnalysisTemplate(p, lookup);
    absl::StatusOr<Profile> parsed = ParseProfile(r.ToParse(p));
    if (parsed.ok() && !r.error.ok()) parsed->spec = r.error;
    out.push_back(std::move(parsed));
  }
  return out;
}

TEST(ExamplesTest, EveryExamplePassesTheOperatorsValidation) {
  std::vector<fs::path> files = Files(Root() / "examples");
  ASSERT_GE(files.size(), 3u) << "run with BOOSTER_SOURCE_DIR set";
  for (const fs::path& f : files) {
    std::vector<absl::StatusOr<Profile>> profiles = Load(f);
    ASSERT_FALSE(profiles.empty()) << f;
    for (const absl::StatusOr<Profile>& p : profiles) {
      ASSERT_TRUE(p.ok()) << f << ": " << p.status();
      EXPECT_TRUE(p->spec.ok()) << f << ": " << p->spec.status();
    }
  }
}

TEST(ExamplesTest, ProfilesTheApiServerRejectsAreRejectedByTheOperatorToo) {
  std::vector<fs::path> files = Files(Root() / "crds/testdata/invalid");
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& f : files) {
    ASSERT_FALSE(CommentValue(f, "# expect: ").empty()) << f << " has no '# expect:' line";
    std::vector<absl::StatusOr<Profile>> profiles = Load(f);
    ASSERT_EQ(profiles.size(), 1u) << f;
    ASSERT_TRUE(profiles[0].ok()) << f << ": " << profiles[0].status();
    EXPECT_FALSE(profiles[0]->spec.ok()) << f << " passes the operator's validation";
  }
}

TEST(ExamplesTest, SemanticProblemsGetTheDocumentedMessage) {
  std::vector<fs::path> files = Files(Root() / "crds/testdata/semantic");
  ASSERT_GE(files.size(), 5u);
  for (const fs::path& f : files) {
    const std::string want = CommentValue(f, "# operator: ");
    ASSERT_FALSE(want.empty()) << f << " has no '# operator:' line";
    std::vector<absl::StatusOr<Profile>> profiles = Load(f);
    ASSERT_EQ(profiles.size(), 1u) << f;
    absl::StatusOr<Profile>& p = profiles[0];
    ASSERT_TRUE(p.ok()) << f << ": " << p.status();
    ASSERT_FALSE(p->spec.ok()) << f;
    EXPECT_THAT(std::string(p->spec.status().message()), HasSubstr(want)) << f;
  }
}

TEST(ExamplesTest, YamlScalarsFollowTheCoreSchema) {
  Json j = ToJson(YAML::Load(R"(a: "4096"
b: 4096
c: true
d: 2m
e: [10, 50]
f: '1')"));
  EXPECT_EQ(j["a"], "4096");
  EXPECT_EQ(j["b"], 4096);
  EXPECT_EQ(j["c"], true);
  EXPECT_EQ(j["d"], "2m");
  EXPECT_EQ(j["e"], Json::parse("[10, 50]"));
  EXPECT_EQ(j["f"], "1");
}

}  // namespace
}  // namespace booster::rollout
