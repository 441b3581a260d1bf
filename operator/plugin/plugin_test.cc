// The verbs against a scripted API server (FakeTransport): the requests each verb makes,
// what it prints, and the errors a user meets (missing profile, no permission, no
// cluster, a missing CRD).
#include "operator/plugin/plugin.h"

#include <map>
#include <mutex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::plugin {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Json;
using kube::testing::FakeTransport;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kServer[] = "https://api.test:6443";
constexpr char kProfilePath[] = "/apis/booster.dev/v1alpha1/namespaces/shop/boosterprofiles/web";

Json Profile(const std::string& phase) {
  Json p = Json::parse(R"({
    "apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                 "creationTimestamp": "2023-11-14T22:00:00Z"},
    "spec": {"targetRef": {"kind": "Deployment", "name": "web"},
             "rollout": {"steps": [50, 100]}},
    "status": {"currentStep": 1, "canaryWeight": 50}
  })");
  p["status"]["phase"] = phase;
  return p;
}

Json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"reason", reason}, {"message", message}, {"code", code}};
}

HttpResponse Answer(int code, const Json& body) { return HttpResponse{code, body.dump(), ""}; }

Json Event(const std::string& name, const std::string& reason, const std::string& message,
           const std::string& time) {
  return {{"metadata", {{"name", name}, {"namespace", "shop"}}},
          {"involvedObject", {{"kind", "BoosterProfile"}, {"name", "web"}, {"uid", "u-1"}}},
          {"type", "Normal"},
          {"reason", reason},
          {"message", message},
          {"firstTimestamp", time},
          {"lastTimestamp", time},
          {"count", 1}};
}

// A clock whose sleeps pass at once, so `status -w` runs its loop without waiting.
class InstantClock final : public Clock {
 public:
  absl::Time Now() const override { return now_; }
  void SleepFor(absl::Duration d) override { now_ += d; }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

class PluginTest : public ::testing::Test {
 protected:
  // Runs `args` against the scripted server `handler`.
  int Run(const std::vector<std::string>& args, FakeTransport::SendHandler handler) {
    out_.str("");
    err_.str("");
    requests_.clear();
    client_made_ = false;
    return RunPlugin(
        args, out_, err_,
        [&](const kube::Config& config) -> absl::StatusOr<std::unique_ptr<kube::Client>> {
          EXPECT_EQ(config.user_agent, "kubectl-booster/0.1");
          client_made_ = true;
          auto transport = std::make_unique<FakeTransport>(
              [this, handler](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
                requests_.push_back(r);
                return handler(r);
              });
          kube::Config c = config;
          c.qps = 0;
          return std::make_unique<kube::Client>(c, std::move(transport), &clock_);
        },
        [&](const char* name) -> std::string {
          auto it = env_.find(name);
          return it == env_.end() ? "" : it->second;
        },
        &clock_);
  }

  void SetUp() override {
    // A kubeconfig of the test server whose context's namespace is "shop".
    const std::string dir = ::testing::TempDir();
    kubeconfig_ = dir + "/plugin_test.kubeconfig";
    FILE* f = std::fopen(kubeconfig_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: test\n",
                            "clusters:\n- name: c\n  cluster: {server: \"", kServer, "\"}\n",
                            "contexts:\n- name: test\n  context: {cluster: c, user: u, namespace: "
                            "shop}\n- name: other\n  context: {cluster: c, user: u, namespace: "
                            "prod}\n",
                            "users:\n- name: u\n  user: {token: secret}\n")
                   .c_str(),
               f);
    std::fclose(f);
    env_["KUBECONFIG"] = kubeconfig_;
  }

  // The requests of the last Run (the client and its transport are gone by then).
  const std::vector<HttpRequest>& Requests() const { return requests_; }

  std::ostringstream out_, err_;
  InstantClock clock_;
  std::vector<HttpRequest> requests_;
  bool client_made_ = false;
  std::string kubeconfig_;
  std::map<std::string, std::string> env_;
};

TEST_F(PluginTest, GetListsTheNamespacesProfilesAsATable) {
  int code = Run({"get"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    EXPECT_EQ(r.path, "/apis/booster.dev/v1alpha1/namespaces/shop/boosterprofiles");
    Json list = {{"kind", "BoosterProfileList"},
                 {"metadata", {{"resourceVersion", "9"}}},
                 {"items", {Profile("Progressing")}}};
    list["items"][0]["status"]["lastDecision"] = {{"verdict", "Pass"}, {"step", 1}};
    return Answer(200, list);
  });
  EXPECT_EQ(code, 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "NAME   TARGET   PHASE         STEP   WEIGHT   VERDICT   AGE\n"
            "web    web      Progressing   1/2    50%      Pass      13m\n");
  ASSERT_EQ(Requests().size(), 1u);
  EXPECT_THAT(Requests()[0].headers,
              testing::Contains(
                  std::make_pair(std::string("Authorization"), std::string("Bearer secret"))));
}

TEST_F(PluginTest, GetAllNamespacesJsonAndEmptyLists) {
  int code = Run({"get", "-A", "-o", "json"}, [](const HttpRequest& r) {
    EXPECT_EQ(r.path, "/apis/booster.dev/v1alpha1/boosterprofiles");
    return absl::StatusOr<HttpResponse>(
        Answer(200, {{"metadata", Json::object()}, {"items", {Profile("Promoted")}}}));
  });
  EXPECT_EQ(code, 0);
  Json printed = Json::parse(out_.str());
  EXPECT_EQ(printed["kind"], "List");
  EXPECT_EQ(printed["items"][0]["status"]["phase"], "Promoted");

  code = Run({"get", "-n", "empty"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(Answer(200, {{"items", Json::array()}}));
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "No resources found in empty namespace.\n");
}

TEST_F(PluginTest, TheContextFlagPicksTheContextAndItsNamespace) {
  int code = Run({"get", "web", "--context", "other"}, [](const HttpRequest& r) {
    EXPECT_EQ(r.path, "/apis/booster.dev/v1alpha1/namespaces/prod/boosterprofiles/web");
    return absl::StatusOr<HttpResponse>(Answer(200, Profile("Pending")));
  });
  EXPECT_EQ(code, 0) << err_.str();
  code = Run({"get", "--context", "nope"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(absl::InternalError("no request expected"));
  });
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(), HasSubstr("Error: cannot load the kubeconfig "));
  EXPECT_THAT(err_.str(), HasSubstr("context \"nope\" not found"));
}

TEST_F(PluginTest, AMissingProfileIsNamedWithItsNamespace) {
  for (const char* verb :
       {"get", "status", "explain", "pause", "resume", "promote", "abort", "retry"}) {
    int code = Run({verb, "ghost", "-n", "shop"}, [](const HttpRequest&) {
      return absl::StatusOr<HttpResponse>(Answer(
          404, StatusBody(404, "NotFound", "boosterprofiles.booster.dev \"ghost\" not found")));
    });
    EXPECT_EQ(code, 1) << verb;
    EXPECT_EQ(err_.str(), "Error: boosterprofile \"ghost\" not found in namespace \"shop\"\n")
        << verb;
  }
}

TEST_F(PluginTest, AMissingCrdIsNotAMissingProfile) {
  int code = Run({"get", "web"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(Answer(
        404, StatusBody(404, "NotFound", "the server could not find the requested resource")));
  });
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(), HasSubstr("does not serve boosterprofiles.booster.dev (is the "
                                    "BoosterProfile CRD installed?"));
}

TEST_F(PluginTest, ForbiddenSaysWhichVerbOnWhichResource) {
  int code = Run({"abort", "web"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (r.method == "GET") return Answer(200, Profile("Progressing"));
    return Answer(403, StatusBody(403, "Forbidden",
                                  "boosterprofiles.booster.dev \"web\" is forbidden: User "
                                  "\"viewer\" cannot patch resource \"boosterprofiles\" in API "
                                  "group \"booster.dev\" in the namespace \"shop\""));
  });
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(),
              HasSubstr("Error: forbidden: you may not patch boosterprofiles.booster.dev \"web\" "
                        "in namespace \"shop\""));
  EXPECT_THAT(err_.str(), HasSubstr("User \"viewer\" cannot patch"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("aborted")));

  code = Run({"get", "-A"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(
        Answer(403, StatusBody(403, "Forbidden", "cannot list resource")));
  });
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(), HasSubstr("you may not list boosterprofiles.booster.dev in all "
                                    "namespaces"));
}

TEST_F(PluginTest, AnUnreachableServerIsNamed) {
  int code = Run({"get"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    return absl::UnavailableError(absl::StrCat("GET ", kServer, r.path, ": Connection refused"));
  });
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err_.str(), HasSubstr(absl::StrCat(
                              "Error: cannot reach the Kubernetes API server at ", kServer, ": ")));
  EXPECT_THAT(err_.str(), HasSubstr("Connection refused"));
}

TEST_F(PluginTest, AbortWritesANewTokenAndRetriesAfterAConflict) {
  int gets = 0, patches = 0;
  int code = Run({"abort", "web"}, [&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    EXPECT_EQ(r.path, kProfilePath);
    if (r.method == "GET") {
      ++gets;
      Json p = Profile("Progressing");
      p["metadata"]["resourceVersion"] = absl::StrCat(gets);
      return Answer(200, p);
    }
    EXPECT_EQ(r.method, "PATCH");
    EXPECT_THAT(r.headers,
                testing::Contains(std::make_pair(std::string("Content-Type"),
                                                 std::string("application/merge-patch+json"))));
    Json patch = Json::parse(r.body);
    EXPECT_EQ(patch["metadata"]["resourceVersion"], absl::StrCat(gets));
    EXPECT_TRUE(patch["metadata"]["annotations"]["booster.dev/abort"].is_string());
    if (++patches == 1) {
      return Answer(409, StatusBody(409, "Conflict", "the object has been modified"));
    }
    return Answer(200, Profile("Progressing"));
  });
  EXPECT_EQ(code, 0) << err_.str();
  EXPECT_EQ(gets, 2);
  EXPECT_EQ(patches, 2);
  EXPECT_THAT(out_.str(), HasSubstr("boosterprofile \"web\" aborted (Progressing at step 1): it "
                                    "rolls back to the Deployment of before (annotation "
                                    "booster.dev/abort=2023-11-14T22:13:20.000000Z)"));
}

TEST_F(PluginTest, ARefusedVerbWritesNothing) {
  int code = Run({"promote", "web"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    EXPECT_EQ(r.method, "GET");
    return Answer(200, Profile("Promoted"));
  });
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err_.str(), "Error: cannot promote boosterprofile \"web\": it is already Promoted\n");
  EXPECT_EQ(Requests().size(), 1u);
}

TEST_F(PluginTest, StatusPrintsTheHistoryFromTheProfilesEvents) {
  int code = Run({"status", "web"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (absl::StartsWith(r.path, "/api/v1/namespaces/shop/events")) {
      EXPECT_THAT(r.path, HasSubstr("fieldSelector=involvedObject.kind%3DBoosterProfile%2C"
                                    "involvedObject.name%3Dweb"));
      return Answer(
          200, {{"items",
                 {Event("web.2", "StepPassed", "step 1 passed: ran 1m", "2023-11-14T22:05:00Z"),
                  Event("web.1", "StepStarted", "enrolled; step 1 of 2: 50%",
                        "2023-11-14T22:04:00Z")}}});
    }
    return Answer(200, Profile("Progressing"));
  });
  EXPECT_EQ(code, 0) << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("Phase:"));
  const size_t started = out.find("StepStarted");
  const size_t passed = out.find("StepPassed");
  ASSERT_NE(started, std::string::npos);
  ASSERT_NE(passed, std::string::npos);
  EXPECT_LT(started, passed);
  EXPECT_THAT(out, HasSubstr("2023-11-14T22:05:00Z   1      Pass"));
}

TEST_F(PluginTest, StatusWithoutPermissionOnEventsWarnsAndStillShowsTheProfile) {
  int code = Run({"status", "web"}, [](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (absl::StartsWith(r.path, "/api/v1/namespaces/shop/events")) {
      return Answer(403, StatusBody(403, "Forbidden", "cannot list resource \"events\""));
    }
    return Answer(200, Profile("Progressing"));
  });
  EXPECT_EQ(code, 0);
  EXPECT_THAT(err_.str(), HasSubstr("Warning: no step history: forbidden: you may not list "
                                    "events in namespace \"shop\""));
  EXPECT_THAT(out_.str(), HasSubstr("Progressing"));
}

TEST_F(PluginTest, StatusWatchPrintsNewHistoryLinesUntilTheRolloutEnds) {
  std::mutex mu;
  int profile_reads = 0;
  int code = Run(
      {"status", "web", "-w", "--interval", "2s"},
      [&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
        std::lock_guard<std::mutex> l(mu);
        Json events = Json::array(
            {Event("web.1", "StepStarted", "enrolled; step 1 of 2: 50%", "2023-11-14T22:04:00Z")});
        if (profile_reads >= 2) {
          events.push_back(Event("web.2", "StepPassed", "step 1 passed", "2023-11-14T22:05:00Z"));
        }
        if (profile_reads >= 3) {
          events.push_back(Event("web.3", "Promoted", "promoted", "2023-11-14T22:06:00Z"));
        }
        if (absl::StartsWith(r.path, "/api/v1/")) return Answer(200, {{"items", events}});
        ++profile_reads;
        return Answer(200, Profile(profile_reads >= 3 ? "Promoted" : "Progressing"));
      });
  EXPECT_EQ(code, 0) << err_.str();
  const std::string out = out_.str();
  // Each event once, in order, and the end.
  EXPECT_EQ(out.find("StepStarted"), out.rfind("StepStarted"));
  EXPECT_EQ(out.find("StepPassed"), out.rfind("StepPassed"));
  EXPECT_LT(out.find("StepPassed"), out.find("   Promoted   "));
  EXPECT_THAT(out, testing::EndsWith("boosterprofile \"web\" is Promoted\n"));
  EXPECT_EQ(profile_reads, 3);
  EXPECT_EQ(clock_.Now(), absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(4));
}

TEST_F(PluginTest, ExplainReadsTheLastDecision) {
  int code = Run({"explain", "web"}, [](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    Json p = Profile("Progressing");
    p["status"]["lastDecision"] = {{"verdict", "Pass"},
                                   {"step", 1},
                                   {"reason", "MetricsPassed"},
                                   {"message", "ok"},
                                   {"time", "2023-11-14T22:05:00Z"},
                                   {"evidence",
                                    {{"judge", "metrics"},
                                     {"latencyP99.baseline", "n=8 median=0.01"},
                                     {"latencyP99.canary", "n=8 median=0.0098"},
                                     {"latencyP99.changePercent", "-2"},
                                     {"latencyP99.pValue", "0.7"},
                                     {"latencyP99.verdict", "Pass"}}}};
    return Answer(200, p);
  });
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out_.str(), HasSubstr("latencyP99   8                  0.01              8"));
  EXPECT_THAT(out_.str(), HasSubstr("-2%      0.7       Pass"));
}

TEST_F(PluginTest, HelpNeedsNoClusterAndMistakesPointToIt) {
  int code = Run({"abort", "--help"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(absl::InternalError("no request expected"));
  });
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out_.str(), HasSubstr("Usage: kubectl booster abort NAME"));
  EXPECT_FALSE(client_made_);

  code = Run({"abort"}, [](const HttpRequest&) {
    return absl::StatusOr<HttpResponse>(absl::InternalError("no request expected"));
  });
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err_.str(),
            "Error: abort needs the profile's NAME\nSee 'kubectl booster abort --help'.\n");
}

TEST(LoadConfigTest, KubeconfigFlagThenEnvironmentThenInClusterThenHome) {
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* n) -> std::string {
    auto it = env.find(n);
    return it == env.end() ? "" : it->second;
  };
  Options o;
  env["HOME"] = "/nonexistent-home";
  absl::StatusOr<kube::Config> c = LoadConfig(o, getenv);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("cannot load the kubeconfig /nonexistent-home/.kube/config"));
  env["KUBECONFIG"] = "/from-env:/second";
  c = LoadConfig(o, getenv);
  EXPECT_THAT(c.status().message(), HasSubstr("cannot load the kubeconfig /from-env:"));
  o.kubeconfig = "/from-flag";
  c = LoadConfig(o, getenv);
  EXPECT_THAT(c.status().message(), HasSubstr("cannot load the kubeconfig /from-flag:"));
  o.kubeconfig.clear();
  env.erase("KUBECONFIG");
  env["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  env["KUBERNETES_SERVICE_PORT"] = "443";
  c = LoadConfig(o, getenv);
  ASSERT_FALSE(c.ok());  // no service-account directory here
  EXPECT_THAT(c.status().message(), HasSubstr("in-cluster config"));
}

}  // namespace
}  // namespace booster::plugin
