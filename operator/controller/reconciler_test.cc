#include "operator/controller/reconciler.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"
#include "operator/kube/helpers.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/status_codec.h"

namespace booster::controller {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using rollout::Phase;
using ::testing::HasSubstr;

constexpr char kProfilePath[] = "/apis/booster.dev/v1alpha1/namespaces/shop/boosterprofiles/web";
constexpr char kTargetPath[] = "/apis/apps/v1/namespaces/shop/deployments/web";
constexpr char kCanaryPath[] = "/apis/apps/v1/namespaces/shop/deployments/web-booster";

std::string Header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

// A small in-memory API server: the profile, Deployments and Events of one namespace,
// with resourceVersions, optimistic concurrency on /status, JSON patch (test ops
// included), create (409 when the name is taken), delete with a uid precondition, and
// injectable failures. Sync() plays
// the informers: it copies the server's objects into the stores.
class FakeApi {
 public:
  FakeApi() {
    profiles_.AddIndexer(kTargetIndex, ProfileTargetIndexFunc);
    deployments_.AddIndexer(kube::kNamespaceIndex, kube::NamespaceIndexFunc);
    hpas_.AddIndexer(kube::kNamespaceIndex, kube::NamespaceIndexFunc);
    pods_.AddIndexer(kube::kNamespaceIndex, kube::NamespaceIndexFunc);
  }

  // Answers with `code` the next `times` requests for which `match` holds.
  void FailNext(std::function<bool(const HttpRequest&)> match, int code, int times = 1) {
    std::lock_guard<std::mutex> l(mu_);
    failures_.push_back({std::move(match), code, times});
  }

  absl::StatusOr<HttpResponse> Handle(const HttpRequest& r) {
    std::lock_guard<std::mutex> l(mu_);
    log_.push_back(r.method + " " + r.path.substr(0, r.path.find('?')));
    requests_.push_back(r);
    for (Failure& f : failures_) {
      if (f.times > 0 && f.match(r)) {
        --f.times;
        return HttpResponse{f.code, Status(f.code, "injected"), ""};
      }
    }
    const std::string path = r.path.substr(0, r.path.find('?'));
    if (absl::StartsWith(path, "/api/v1/namespaces/shop/events")) {
      Json ev = Json::parse(r.body);
      if (r.method == "POST") events_.push_back(ev);
      return HttpResponse{201, ev.dump(), ""};
    }
    auto it = objects_.find(path.substr(0, path.size() - (absl::EndsWith(path, "/status") ? 7 : 0)));
    const bool status = absl::EndsWith(path, "/status");
    const std::string key = status ? path.substr(0, path.size() - 7) : path;
    it = objects_.find(key);
    if (r.method == "PUT" && status) {
      if (it == objects_.end()) return HttpResponse{404, Status(404, "not found"), ""};
      Json body = Json::parse(r.body);
      if (body["metadata"].value("resourceVersion", "") !=
          it->second["metadata"]["resourceVersion"].get<std::string>()) {
        return HttpResponse{409, Status(409, "the object has been modified"), ""};
      }
      it->second["status"] = body["status"];
      Bump(it->second);
      return HttpResponse{200, it->second.dump(), ""};
    }
    if (r.method == "PATCH" && Header(r, "Content-Type") == "application/json-patch+json") {
      if (it == objects_.end()) return HttpResponse{404, Status(404, "not found"), ""};
      Json patched;
      try {
        patched = it->second.patch(Json::parse(r.body));
      } catch (const Json::exception& e) {
        return HttpResponse{422, Status(422, e.what()), ""};
      }
      if (patched["spec"] != it->second["spec"]) {
        patched["metadata"]["generation"] = patched["metadata"].value("generation", 1) + 1;
      }
      it->second = patched;
      Bump(it->second);
      Json out = it->second;
      if (kube::IsBeingDeleted(out) && out["metadata"].value("finalizers", Json::array()).empty()) {
        objects_.erase(it);
      }
      return HttpResponse{200, out.dump(), ""};
    }
    if (r.method == "POST" && absl::EndsWith(path, "/deployments")) {
      Json body = Json::parse(r.body);
      const std::string obj_key = path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.count(obj_key) > 0) {
        return HttpResponse{409, Status(409, "deployments.apps already exists"), ""};
      }
      body["metadata"]["uid"] = absl::StrCat("canary-uid-", ++uids_);
      body["metadata"]["generation"] = 1;
      Bump(body);
      objects_[obj_key] = body;
      return HttpResponse{201, body.dump(), ""};
    }
    if (r.method == "DELETE") {
      if (it == objects_.end()) return HttpResponse{404, Status(404, "not found"), ""};
      Json options = r.body.empty() ? Json::object() : Json::parse(r.body);
      const std::string want = options.value("/preconditions/uid"_json_pointer, std::string());
      if (!want.empty() && want != it->second["metadata"].value("uid", "")) {
        return HttpResponse{409, Status(409, "Precondition failed: UID in precondition"), ""};
      }
      objects_.erase(it);
      return HttpResponse{200, Status(200, "deleted"), ""};
    }
    return HttpResponse{405, Status(405, "unexpected " + r.method + " " + path), ""};
  }

  void Put(const std::string& path, Json obj) {
    std::lock_guard<std::mutex> l(mu_);
    Bump(obj);
    objects_[path] = std::move(obj);
  }
  Json Get(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = objects_.find(path);
    return it == objects_.end() ? Json(nullptr) : it->second;
  }
  // Sets every Deployment's status to "all replicas of the current template available".
  void SettleDeployments() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [path, obj] : objects_) {
      if (obj.value("kind", "") != "Deployment") continue;
      int r = obj["spec"].value("replicas", 1);
      obj["status"] = {{"observedGeneration", obj["metadata"]["generation"]},
                       {"replicas", r},
                       {"updatedReplicas", r},
                       {"readyReplicas", r},
                       {"availableReplicas", r}};
      Bump(obj);
    }
  }
  // The informers catch up.
  void Sync() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<ObjectPtr> profiles, deployments;
    for (const auto& [path, obj] : objects_) {
      auto ptr = std::make_shared<const Json>(obj);
      (obj.value("kind", "") == "Deployment" ? deployments : profiles).push_back(ptr);
    }
    profiles_.Replace(profiles);
    deployments_.Replace(deployments);
  }
  std::vector<std::string> TakeLog() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    out.swap(log_);
    return out;
  }
  std::vector<HttpRequest> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  std::vector<Json> events() {
    std::lock_guard<std::mutex> l(mu_);
    return events_;
  }

  kube::Store profiles_, deployments_, hpas_, pods_;

 private:
  struct Failure {
    std::function<bool(const HttpRequest&)> match;
    int code;
    int times;
  };
  static std::string Status(int code, const std::string& msg) {
    return Json{{"kind", "Status"}, {"code", code}, {"message", msg}}.dump();
  }
  void Bump(Json& obj) { obj["metadata"]["resourceVersion"] = absl::StrCat(++rv_); }

  std::mutex mu_;
  std::map<std::string, Json> objects_;
  std::vector<Failure> failures_;
  std::vector<std::string> log_;
  std::vector<HttpRequest> requests_;
  std::vector<Json> events_;
  int rv_ = 100;
  int uids_ = 0;
};

Json Target(int replicas) {
  return Json::parse(absl::StrCat(R"json({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "uid": "target-uid", "generation": 1},
    "spec": {"replicas": )json",
                                  replicas, R"json(, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}})json"));
}

Json Profile(bool with_finalizer = true) {
  Json p = Json::parse(R"json({
    "apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
    "metadata": {"name": "web", "namespace": "shop", "uid": "profile-uid", "generation": 1},
    "spec": {"targetRef": {"kind": "Deployment", "name": "web"},
             "tuning": {"runtime": {"preload": {"listenBacklog": 4096}}},
             "rollout": {"steps": [50, 100], "stepDuration": "1m",
                         "analysis": {"mode": "Time"}}}})json");
  if (with_finalizer) p["metadata"]["finalizers"] = {rollout::kFinalizer};
  return p;
}

class RecordingObserver final : public ReconcileObserver {
 public:
  void Reconciled(const std::string& ns, const std::string& name,
                  const rollout::RolloutStatus& status, const rollout::Observations&,
                  const rollout::AnalysisSpec* a) override {
    std::lock_guard<std::mutex> l(mu_);
    phases[ns + "/" + name] = status.phase;
    if (a != nullptr) analysis = *a;
  }
  void Forgotten(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> l(mu_);
    phases.erase(ns + "/" + name);
    forgotten.push_back(ns + "/" + name);
  }
  std::mutex mu_;
  std::map<std::string, Phase> phases;
  std::vector<std::string> forgotten;
  std::optional<rollout::AnalysisSpec> analysis;  // the last one handed over
};

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    kube::Config config;
    config.server = "https://127.0.0.1:1";
    config.qps = 0;
    client_ = std::make_unique<kube::Client>(
        config,
        std::make_unique<kube::testing::FakeTransport>(
            [this](const HttpRequest& r) { return api_.Handle(r); }),
        &clock_);
    recorder_ = std::make_unique<kube::EventRecorder>(client_.get(), "booster-operator", &clock_);
    reconciler_ = std::make_unique<ProfileReconciler>(
        client_.get(), ReconcilerStores{&api_.profiles_, &api_.deployments_, &api_.hpas_, &api_.pods_},
        recorder_.get(), &verdicts_, &clock_, ReconcilerOptions{}, &observer_);
  }

  absl::StatusOr<kube::Result> Reconcile() { return reconciler_->Reconcile("shop/web"); }

  // A reconciler of operator installation `instance` in place of the default one.
  void UseInstance(const std::string& instance) {
    ReconcilerOptions o;
    o.mutation.instance = instance;
    reconciler_ = std::make_unique<ProfileReconciler>(
        client_.get(), ReconcilerStores{&api_.profiles_, &api_.deployments_, &api_.hpas_, &api_.pods_},
        recorder_.get(), &verdicts_, &clock_, o, &observer_);
  }
  std::vector<Json> EventsOf(const std::string& reason) {
    std::vector<Json> out;
    for (const Json& e : api_.events()) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  }

  // The profile and a settled target of `replicas`, both visible to the informers.
  void GivenProfileAndTarget(int replicas) {
    api_.Put(kProfilePath, Profile());
    api_.Put(kTargetPath, Target(replicas));
    api_.SettleDeployments();
    api_.Sync();
  }
  Phase PhaseOnServer() {
    return rollout::ParseStatus(api_.Get(kProfilePath).value("status", Json::object())).phase;
  }
  // Reconciles, lets the pods come up and the informers catch up, until `done`.
  void DriveUntil(const std::function<bool()>& done, int limit = 60) {
    for (int i = 0; i < limit && !done(); ++i) {
      absl::StatusOr<kube::Result> r = Reconcile();
      ASSERT_TRUE(r.ok()) << r.status();
      api_.SettleDeployments();
      api_.Sync();
      clock_.Advance(absl::Seconds(10));
    }
    ASSERT_TRUE(done()) << "stuck in " << rollout::PhaseName(PhaseOnServer());
  }

  FakeClock clock_{absl::FromUnixSeconds(1'800'000'000)};
  FakeApi api_;
  rollout::TimeVerdictSource verdicts_;
  RecordingObserver observer_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<ProfileReconciler> reconciler_;
};

TEST_F(ReconcilerTest, WritesTheStatusBeforeAnyAction) {
  GivenProfileAndTarget(4);
  absl::StatusOr<kube::Result> r = Reconcile();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(PhaseOnServer(), Phase::kEnrolling);
  std::vector<std::string> log = api_.TakeLog();
  ASSERT_GE(log.size(), 3u);
  // Status, then the Event of the transition it records, then the actions: an action that
  // fails loses no Event.
  EXPECT_EQ(log[0], std::string("PUT ") + kProfilePath + "/status");
  EXPECT_THAT(log[1], HasSubstr("/events"));
  EXPECT_EQ(log[2], std::string("PATCH ") + kTargetPath);
  // The enrollment patch is guarded by the target's uid; it keeps no copy of the template:
  // the layer comes off whatever the template is later.
  Json target = api_.Get(kTargetPath);
  EXPECT_TRUE(rollout::IsEnrolled(target["spec"]["template"]));
  EXPECT_EQ(rollout::TeamTemplate(target["spec"]["template"], rollout::MutationOptions{}),
            Target(4)["spec"]["template"]);
  EXPECT_GT(r->requeue_after, absl::ZeroDuration());
  EXPECT_EQ(observer_.phases["shop/web"], Phase::kEnrolling);
  // The informers have not caught up; the next pass reads our own writes, not the stale
  // cache: no conflict, and nothing is re-sent.
  api_.SettleDeployments();
  r = Reconcile();
  ASSERT_TRUE(r.ok()) << r.status();
  for (const std::string& l : api_.TakeLog()) EXPECT_THAT(l, ::testing::Not(HasSubstr("PUT")));
}

TEST_F(ReconcilerTest, AConflictOnTheStatusWriteExecutesNoAction) {
  GivenProfileAndTarget(4);
  api_.FailNext([](const HttpRequest& r) { return absl::EndsWith(r.path, "/status"); }, 409);
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();
  EXPECT_EQ(api_.TakeLog(), (std::vector<std::string>{std::string("PUT ") + kProfilePath +
                                                      "/status"}));
  EXPECT_FALSE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
  EXPECT_EQ(PhaseOnServer(), Phase::kPending);
  // The retry goes through.
  r = Reconcile();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
}

TEST_F(ReconcilerTest, AStaleCacheConflictsInsteadOfActingOnAnOldStatus) {
  GivenProfileAndTarget(4);
  ASSERT_TRUE(Reconcile().ok());
  api_.SettleDeployments();
  api_.Sync();
  // Someone else writes the profile; the informer has not seen it yet.
  Json p = api_.Get(kProfilePath);
  p["metadata"]["labels"] = {{"team", "shop"}};
  api_.Put(kProfilePath, p);
  api_.TakeLog();
  // Enrollment is complete, so the machine wants to write Progressing: the write carries
  // the cached resourceVersion, conflicts, and nothing is acted on.
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();
  std::vector<std::string> log = api_.TakeLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("/status"));
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kProgressing);
}

TEST_F(ReconcilerTest, AFailedActionIsRetriedAndIsIdempotent) {
  GivenProfileAndTarget(4);
  api_.FailNext(
      [](const HttpRequest& r) { return r.method == "PATCH" && r.path.find(kTargetPath) == 0; },
      500, /*times=*/10);  // 5xx: the client's own retries give up, the reconcile fails
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kEnrolling);  // the status went first
  EXPECT_FALSE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
  api_.FailNext([](const HttpRequest&) { return false; }, 0);
  // Drain the injected failures, then the next pass (no status change) re-emits it.
  for (int i = 0; i < 10 && !rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]);
       ++i) {
    r = Reconcile();
  }
  ASSERT_TRUE(r.ok()) << r.status();
  const Json once = api_.Get(kTargetPath);
  EXPECT_TRUE(rollout::IsEnrolled(once["spec"]["template"]));
  // Every attempt sent the same patch.
  std::vector<std::string> bodies;
  for (const HttpRequest& req : api_.requests()) {
    if (req.method == "PATCH" && req.path.find(kTargetPath) == 0) bodies.push_back(req.body);
  }
  ASSERT_GE(bodies.size(), 2u);
  for (const std::string& b : bodies) EXPECT_EQ(b, bodies.front());
  // A duplicate of it is refused: it claims the target, so it tests the resourceVersion
  // it was planned on, which has moved on. The next pass sees the claim and has nothing
  // left to send.
  EXPECT_THROW(once.patch(Json::parse(bodies.front())), Json::exception);
  api_.Sync();
  api_.TakeLog();
  ASSERT_TRUE(Reconcile().ok());
  for (const std::string& l : api_.TakeLog()) {
    EXPECT_NE(l, std::string("PATCH ") + kTargetPath);
  }
  EXPECT_EQ(api_.Get(kTargetPath)["spec"], once["spec"]);
}

TEST_F(ReconcilerTest, ReachesPromotedAgainstTheFakeApi) {
  GivenProfileAndTarget(4);
  DriveUntil([&] { return PhaseOnServer() == Phase::kPromoted; }, 100);
  Json target = api_.Get(kTargetPath);
  EXPECT_EQ(rollout::TemplateArm(target["spec"]["template"]), rollout::kArmPromoted);
  EXPECT_EQ(target["spec"]["replicas"], 4);
  EXPECT_TRUE(api_.Get(kCanaryPath).is_null());
  // The canary was created (POST), then only ever patched after a test of its uid, and
  // deleted on the precondition of that uid; every patch names our field manager.
  int created = 0, patched = 0, deleted = 0;
  for (const HttpRequest& r : api_.requests()) {
    if (r.method == "POST" && absl::StrContains(r.path, "/deployments")) ++created;
    if (r.method == "PATCH" && r.path.find(kCanaryPath) == 0) {
      ++patched;
      EXPECT_EQ(Header(r, "Content-Type"), "application/json-patch+json");
      EXPECT_THAT(r.path, HasSubstr("fieldManager=booster-operator"));
      const Json body = Json::parse(r.body);
      EXPECT_EQ(body[0]["op"], "test");
      EXPECT_EQ(body[0]["path"], "/metadata/uid");
    }
    if (r.method == "DELETE" && r.path.find(kCanaryPath) == 0) {
      ++deleted;
      EXPECT_THAT(r.body, HasSubstr(R"("preconditions":{"uid":"canary-uid-)"));
    }
  }
  EXPECT_EQ(created, 1);
  EXPECT_GE(patched, 1);
  EXPECT_EQ(deleted, 1);
}

// Every new Event of a pass goes to the notifications once, after the status it belongs to
// is written (the profile handed over carries it), with the phase a transition moved to;
// one the notifications refuse is a Warning Event and costs the rollout nothing.
TEST_F(ReconcilerTest, EachNewEventIsHandedToTheNotificationsWithTheStatusItBelongsTo) {
  ReconcilerOptions o;
  std::vector<std::pair<std::string, std::string>> told;  // reason, transition_to
  std::vector<std::string> phases;  // status.phase of the profile handed over
  o.notify = [&](const Json& profile, const rollout::Action& e) -> absl::Status {
    told.push_back({e.reason, e.transition_to});
    phases.push_back(profile.value("/status/phase"_json_pointer, ""));
    if (e.reason == "Promoted") return absl::InvalidArgumentError("spec.notifications[0] bad");
    return absl::OkStatus();
  };
  reconciler_ = std::make_unique<ProfileReconciler>(
      client_.get(), ReconcilerStores{&api_.profiles_, &api_.deployments_, &api_.hpas_, &api_.pods_},
      recorder_.get(), &verdicts_, &clock_, o, &observer_);
  GivenProfileAndTarget(4);
  DriveUntil([&] { return PhaseOnServer() == Phase::kPromoted; }, 100);
  std::vector<std::string> recorded;
  for (const Json& e : api_.events()) {
    if (e.value("reason", "") != "NotificationsInvalid") recorded.push_back(e.value("reason", ""));
  }
  std::vector<std::string> notified;
  for (const auto& [reason, to] : told) notified.push_back(reason);
  EXPECT_EQ(notified, recorded) << "each Event once, in order";
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.back(), (std::pair<std::string, std::string>{"Promoted", "Promoted"}));
  EXPECT_EQ(phases.back(), "Promoted") << "the status is written before anyone is told";
  std::vector<Json> invalid = EventsOf("NotificationsInvalid");
  ASSERT_EQ(invalid.size(), 1u);
  EXPECT_EQ(invalid[0]["type"], "Warning");
  EXPECT_THAT(invalid[0].value("message", ""),
              HasSubstr("the Promoted notification was not sent: spec.notifications[0] bad"));
}

TEST_F(ReconcilerTest, AbortRestoresTheTargetExactly) {
  GivenProfileAndTarget(5);
  const Json before = api_.Get(kTargetPath);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing && !api_.Get(kCanaryPath).is_null(); });
  Json p = api_.Get(kProfilePath);
  p["metadata"]["annotations"] = {{rollout::kAnnotationAbort, "incident-1"}};
  api_.Put(kProfilePath, p);
  api_.Sync();
  DriveUntil([&] { return PhaseOnServer() == Phase::kRolledBack; });
  Json target = api_.Get(kTargetPath);
  EXPECT_EQ(target["spec"]["template"], before["spec"]["template"]);
  EXPECT_EQ(target["spec"]["replicas"], 5);
  EXPECT_FALSE(target["metadata"].contains("annotations"));
  EXPECT_TRUE(api_.Get(kCanaryPath).is_null());
}

TEST_F(ReconcilerTest, DeletionRunsTheFinalizerPath) {
  GivenProfileAndTarget(4);
  const Json before = api_.Get(kTargetPath);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing && !api_.Get(kCanaryPath).is_null(); });
  Json p = api_.Get(kProfilePath);
  p["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
  api_.Put(kProfilePath, p);
  api_.Sync();
  api_.TakeLog();
  for (int i = 0; i < 10 && !api_.Get(kProfilePath).is_null(); ++i) {
    absl::StatusOr<kube::Result> r = Reconcile();
    ASSERT_TRUE(r.ok()) << r.status();
    api_.SettleDeployments();
    api_.Sync();
  }
  EXPECT_TRUE(api_.Get(kProfilePath).is_null());  // finalizer removed: the profile is gone
  EXPECT_TRUE(api_.Get(kCanaryPath).is_null());
  Json target = api_.Get(kTargetPath);
  EXPECT_EQ(target["spec"]["template"], before["spec"]["template"]);
  EXPECT_EQ(target["spec"]["replicas"], 4);
  EXPECT_FALSE(target["metadata"].contains("annotations"));
  // The canary went before the finalizer, the finalizer last.
  std::vector<std::string> log = api_.TakeLog();
  auto pos = [&](const std::string& s) {
    return std::find_if(log.begin(), log.end(), [&](const std::string& l) { return l == s; }) -
           log.begin();
  };
  const auto del = pos(std::string("DELETE ") + kCanaryPath);
  const auto fin = pos(std::string("PATCH ") + kProfilePath);
  EXPECT_LT(del, static_cast<long>(log.size()));
  EXPECT_LT(fin, static_cast<long>(log.size()));
  EXPECT_LT(del, fin);
  EXPECT_EQ(fin, static_cast<long>(log.size()) - 1);
  EXPECT_THAT(observer_.forgotten, ::testing::Contains("shop/web"));
  // The key of a profile that is gone: nothing to do.
  absl::StatusOr<kube::Result> r = Reconcile();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requeue_after, absl::ZeroDuration());
}

TEST_F(ReconcilerTest, AnInvalidProfileGetsInvalidSpecAndAWarningAndTouchesNothing) {
  Json p = Profile();
  p["spec"]["rollout"]["steps"] = {50, 10};
  api_.Put(kProfilePath, p);
  api_.Put(kTargetPath, Target(4));
  api_.SettleDeployments();
  api_.Sync();
  const Json before = api_.Get(kTargetPath);
  ASSERT_TRUE(Reconcile().ok());
  Json status = api_.Get(kProfilePath)["status"];
  EXPECT_EQ(status["phase"], "Failed");
  bool invalid = false;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == "InvalidSpec") invalid = c["status"] == "True";
  }
  EXPECT_TRUE(invalid);
  ASSERT_FALSE(api_.events().empty());
  EXPECT_EQ(api_.events().back()["type"], "Warning");
  EXPECT_EQ(api_.events().back()["reason"], "InvalidSpec");
  EXPECT_EQ(api_.Get(kTargetPath), before);
  for (const std::string& l : api_.TakeLog()) EXPECT_THAT(l, ::testing::Not(HasSubstr("deployments")));
}

TEST_F(ReconcilerTest, ATransitionsEventIsRecordedEvenWhenItsActionFails) {
  GivenProfileAndTarget(4);
  api_.FailNext(
      [](const HttpRequest& r) { return r.method == "PATCH" && r.path.find(kTargetPath) == 0; },
      500, /*times=*/10);
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kEnrolling);
  // The transition's Event is there although the enrollment patch failed.
  EXPECT_EQ(EventsOf("Enrolling").size(), 1u);
  // The retries record nothing again.
  for (int i = 0; i < 10 && !rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]);
       ++i) {
    (void)Reconcile();
  }
  EXPECT_TRUE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
  EXPECT_EQ(EventsOf("Enrolling").size(), 1u);
}

TEST_F(ReconcilerTest, AnEventTheApiServerRefusedIsRecordedOnTheNextPassOnce) {
  GivenProfileAndTarget(4);
  api_.FailNext([](const HttpRequest& r) { return r.path.find("/events") != std::string::npos; },
                500, /*times=*/10);
  ASSERT_TRUE(Reconcile().ok()) << "an Event never fails the pass";
  EXPECT_TRUE(EventsOf("Enrolling").empty());
  EXPECT_TRUE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
  api_.FailNext([](const HttpRequest&) { return false; }, 0);
  api_.SettleDeployments();
  api_.Sync();
  for (int i = 0; i < 10 && EventsOf("Enrolling").empty(); ++i) (void)Reconcile();
  // Kept and recorded first on a later pass, under the name it was planned with.
  ASSERT_EQ(EventsOf("Enrolling").size(), 1u);
  EXPECT_THAT(EventsOf("Enrolling")[0]["metadata"]["name"].get<std::string>(),
              ::testing::StartsWith("web."));
  const std::vector<Json> started = EventsOf("StepStarted");
  EXPECT_EQ(started.size(), 1u);
  for (int i = 0; i < 3; ++i) (void)Reconcile();
  EXPECT_EQ(EventsOf("Enrolling").size(), 1u);
}

TEST_F(ReconcilerTest, ClaimsAnUnclaimedProfileForItsInstanceBeforeAnythingElse) {
  UseInstance("booster-system/booster");
  GivenProfileAndTarget(4);
  ASSERT_TRUE(Reconcile().ok());
  std::vector<std::string> log = api_.TakeLog();
  ASSERT_EQ(log.size(), 1u) << absl::StrJoin(log, "\n");
  EXPECT_EQ(log[0], std::string("PATCH ") + kProfilePath);
  const Json claimed = api_.Get(kProfilePath);
  EXPECT_EQ(claimed["metadata"]["annotations"][rollout::kInstanceAnnotation],
            "booster-system/booster");
  // The claim tested the version it read: a second claim planned on that version fails.
  bool tested = false;
  for (const HttpRequest& req : api_.requests()) {
    if (req.method == "PATCH" && req.body.find("resourceVersion") != std::string::npos) tested = true;
  }
  EXPECT_TRUE(tested);
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kEnrolling);
}

TEST_F(ReconcilerTest, AProfileAnotherInstanceClaimedGetsNothingWritten) {
  UseInstance("booster-b/booster");
  Json p = Profile();
  p["metadata"]["annotations"][rollout::kInstanceAnnotation] = "booster-a/booster";
  api_.Put(kProfilePath, p);
  api_.Put(kTargetPath, Target(4));
  api_.SettleDeployments();
  api_.Sync();
  const Json target = api_.Get(kTargetPath);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<kube::Result> r = Reconcile();
    ASSERT_TRUE(r.ok()) << r.status();
    clock_.Advance(absl::Seconds(10));
  }
  for (const std::string& l : api_.TakeLog()) {
    EXPECT_THAT(l, ::testing::AnyOf(HasSubstr("POST /api/v1/namespaces/shop/events")))
        << "wrote " << l;
  }
  EXPECT_EQ(api_.Get(kTargetPath), target);
  EXPECT_FALSE(api_.Get(kProfilePath).contains("status"));
  // Said once, naming both.
  ASSERT_EQ(EventsOf("ManagedElsewhere").size(), 1u);
  EXPECT_THAT(EventsOf("ManagedElsewhere")[0].value("message", ""),
              HasSubstr("managed by operator instance booster-a/booster"));
  EXPECT_THAT(observer_.forgotten, ::testing::Contains("shop/web"));
}

TEST_F(ReconcilerTest, AddsTheFinalizerFirst) {
  api_.Put(kProfilePath, Profile(/*with_finalizer=*/false));
  api_.Put(kTargetPath, Target(2));
  api_.SettleDeployments();
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(api_.Get(kProfilePath)["metadata"]["finalizers"], Json({rollout::kFinalizer}));
  EXPECT_FALSE(rollout::IsEnrolled(api_.Get(kTargetPath)["spec"]["template"]));
}

TEST_F(ReconcilerTest, AnHpaOnTheTargetIsDetectedAndReported) {
  GivenProfileAndTarget(4);
  Json other = {{"metadata", {{"name", "other"}, {"namespace", "shop"}}},
                {"spec", {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "api"}}}}}};
  api_.hpas_.Upsert(std::make_shared<const Json>(other));
  Json hpa = {{"metadata", {{"name", "web-hpa"}, {"namespace", "shop"}}},
              {"spec", {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "web"}}}}}};
  api_.hpas_.Upsert(std::make_shared<const Json>(hpa));
  ASSERT_TRUE(Reconcile().ok());
  bool detected = false;
  const Json status = api_.Get(kProfilePath)["status"];
  for (const Json& c : status["conditions"]) {
    if (c["type"] == std::string(rollout::kConditionHpaDetected)) {
      detected = c["status"] == "True";
      EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("web-hpa"));
    }
  }
  EXPECT_TRUE(detected) << status.dump();
}

// A pod the kubelet refused for a sysctl, annotated with a profile's key and seen
// through the pod informer's store.
Json RefusedPod(const std::string& name, const std::string& profile, const std::string& arm) {
  return Json{{"metadata",
               {{"name", name},
                {"namespace", "shop"},
                {"labels", {{rollout::kArmLabel, arm}}},
                {"annotations", {{rollout::kProfileAnnotation, profile}}}}},
              {"status",
               {{"phase", "Failed"},
                {"reason", "SysctlForbidden"},
                {"message", "Pod forbidden sysctl: \"kernel.shmmax\" not allowlisted"}}}};
}

TEST_F(ReconcilerTest, ACanaryPodTheKubeletRefusedRollsTheProfileBack) {
  GivenProfileAndTarget(4);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing; });
  // Another profile's pod, and this profile's baseline pod: not this tuning's refusal.
  api_.pods_.Upsert(std::make_shared<const Json>(RefusedPod("a", "shop/other", "canary")));
  api_.pods_.Upsert(std::make_shared<const Json>(RefusedPod("b", "shop/web", "baseline")));
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kProgressing);
  api_.pods_.Upsert(std::make_shared<const Json>(RefusedPod("c", "shop/web", "canary")));
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kRollingBack);
  bool rejected = false;
  const Json status = api_.Get(kProfilePath)["status"];
  for (const Json& c : status["conditions"]) {
    if (c["type"] == std::string(rollout::kConditionTuningRejected)) {
      rejected = c["status"] == "True";
      EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("canary pod c"));
    }
  }
  EXPECT_TRUE(rejected) << status.dump();
}

// --- ownership: every write path refuses what is not ours -----------------------------------

Json UsersDeployment(const std::string& name) {
  Json d = Target(2);
  d["metadata"]["name"] = name;
  d["metadata"]["uid"] = "users-uid";
  d["spec"]["selector"]["matchLabels"]["app"] = "users-own";
  d["spec"]["template"]["metadata"]["labels"]["app"] = "users-own";
  return d;
}

TEST_F(ReconcilerTest, AUsersDeploymentAtTheCanarysNameFailsTheProfileAndIsNeverTouched) {
  GivenProfileAndTarget(4);
  api_.Put(kCanaryPath, UsersDeployment("web-booster"));
  api_.SettleDeployments();
  api_.Sync();
  const Json target = api_.Get(kTargetPath), users = api_.Get(kCanaryPath);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kFailed);
  const Json status = api_.Get(kProfilePath)["status"];
  bool conflict = false;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == rollout::kConditionConflict) {
      conflict = c["status"] == "True" && c["reason"] == "CanaryNameTaken";
      EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("web-booster"));
      EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("Rename or delete"));
    }
  }
  EXPECT_TRUE(conflict) << status.dump();
  bool warned = false;
  for (const Json& e : api_.events()) {
    warned |= e["type"] == "Warning" && e["reason"] == "CanaryNameTaken";
  }
  EXPECT_TRUE(warned);
  EXPECT_EQ(api_.Get(kTargetPath), target);  // not a replica less, not an annotation more
  EXPECT_EQ(api_.Get(kCanaryPath), users);
  // Deleting the profile: the user's Deployment stays.
  Json p = api_.Get(kProfilePath);
  p["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
  api_.Put(kProfilePath, p);
  api_.Sync();
  for (int i = 0; i < 5 && !api_.Get(kProfilePath).is_null(); ++i) {
    ASSERT_TRUE(Reconcile().ok());
    api_.Sync();
  }
  EXPECT_TRUE(api_.Get(kProfilePath).is_null());
  EXPECT_EQ(api_.Get(kCanaryPath), users);
  EXPECT_EQ(api_.Get(kTargetPath), target);
  for (const HttpRequest& r : api_.requests()) {
    EXPECT_FALSE(r.path.find(kCanaryPath) == 0 && r.method != "GET") << r.method << " " << r.path;
  }
}

TEST_F(ReconcilerTest, ACanaryNameTakenBetweenTheReadAndTheCreateCostsTheTargetNoReplica) {
  GivenProfileAndTarget(4);
  ASSERT_TRUE(Reconcile().ok());  // enrolled
  api_.SettleDeployments();
  api_.Sync();
  // The user creates a Deployment under the canary's name; the informers have not seen it
  // when the next pass starts step 1.
  api_.Put(kCanaryPath, UsersDeployment("web-booster"));
  const Json users = api_.Get(kCanaryPath);
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();  // 409 on the create
  EXPECT_EQ(PhaseOnServer(), Phase::kProgressing);
  // The canary is created empty before the target gives up a replica: nothing was lost.
  EXPECT_EQ(api_.Get(kTargetPath)["spec"]["replicas"], 4);
  EXPECT_EQ(api_.Get(kCanaryPath), users);
  api_.Sync();
  DriveUntil([&] { return PhaseOnServer() == Phase::kRolledBack; });
  EXPECT_EQ(api_.Get(kCanaryPath)["metadata"]["uid"], "users-uid");
  EXPECT_EQ(api_.Get(kCanaryPath)["spec"], users["spec"]);
  const Json target = api_.Get(kTargetPath);
  EXPECT_EQ(target["spec"]["replicas"], 4);
  EXPECT_FALSE(rollout::IsEnrolled(target["spec"]["template"]));
  for (const HttpRequest& req : api_.requests()) {
    if (req.method == "PATCH" && req.path.find(kTargetPath) == 0) {
      for (const Json& op : Json::parse(req.body)) {
        if (op["path"] == "/spec/replicas") {
          EXPECT_GE(op["value"].get<int>(), 4) << req.body;
        }
      }
    }
  }
}

TEST_F(ReconcilerTest, AReplacedCanaryIsNeitherPatchedNorDeleted) {
  GivenProfileAndTarget(4);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing && !api_.Get(kCanaryPath).is_null(); });
  // Our canary is deleted and a user's Deployment takes its name; the informers lag.
  Json users = UsersDeployment("web-booster");
  api_.Put(kCanaryPath, users);
  users = api_.Get(kCanaryPath);
  // An abort wants the canary deleted: the delete carries our canary's uid and is refused.
  Json p = api_.Get(kProfilePath);
  p["metadata"]["annotations"] = {{rollout::kAnnotationAbort, "now"}};
  api_.Put(kProfilePath, p);
  api_.profiles_.Replace({std::make_shared<const Json>(api_.Get(kProfilePath))});
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();
  EXPECT_EQ(api_.Get(kCanaryPath), users);
  // Once the informers catch up, the machine sees a Deployment that is not ours.
  api_.Sync();
  DriveUntil([&] { return PhaseOnServer() == Phase::kRolledBack; });
  EXPECT_EQ(api_.Get(kCanaryPath)["metadata"]["uid"], "users-uid");
  EXPECT_EQ(api_.Get(kCanaryPath)["spec"], users["spec"]);
  EXPECT_EQ(api_.Get(kTargetPath)["spec"]["replicas"], 4);
}

TEST_F(ReconcilerTest, ASecondProfileOnTheSameDeploymentWaitsNamingTheHolder) {
  GivenProfileAndTarget(4);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing; });
  const std::string second = "/apis/booster.dev/v1alpha1/namespaces/shop/boosterprofiles/web2";
  Json p2 = Profile();
  p2["metadata"]["name"] = "web2";
  p2["metadata"]["uid"] = "profile2-uid";
  api_.Put(second, p2);
  api_.Sync();
  const Json target = api_.Get(kTargetPath), canary = api_.Get(kCanaryPath);
  api_.TakeLog();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<kube::Result> r = reconciler_->Reconcile("shop/web2");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->requeue_after, absl::ZeroDuration());
    api_.Sync();
  }
  for (const std::string& l : api_.TakeLog()) EXPECT_THAT(l, ::testing::Not(HasSubstr("deployments")));
  EXPECT_EQ(api_.Get(kTargetPath), target);
  EXPECT_EQ(api_.Get(kCanaryPath), canary);
  const Json status = api_.Get(second)["status"];
  EXPECT_EQ(status["phase"], "Pending");
  EXPECT_EQ(status["lastTransition"]["reason"], "TargetHeld");
  EXPECT_THAT(status["lastTransition"]["message"].get<std::string>(),
              HasSubstr("held by BoosterProfile web (uid profile-uid)"));
  int warnings = 0;
  for (const Json& e : api_.events()) {
    warnings += e["reason"] == "TargetHeld" && e["involvedObject"]["name"] == "web2";
  }
  EXPECT_EQ(warnings, 1);  // said once, not on every pass
}

TEST_F(ReconcilerTest, TheLoserOfAClaimRaceBacksOffWithoutWriting) {
  api_.Put(kProfilePath, Profile());
  api_.Put(kTargetPath, Target(4));
  api_.SettleDeployments();
  api_.Sync();
  // Another profile claims the target after our informers last saw it.
  Json t = api_.Get(kTargetPath);
  t["metadata"]["annotations"] = {{rollout::kHolderAnnotation, "other"},
                                  {rollout::kHolderUidAnnotation, "other-uid"}};
  api_.Put(kTargetPath, t);
  const Json claimed = api_.Get(kTargetPath);
  absl::StatusOr<kube::Result> r = Reconcile();
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();  // the claim's test failed
  EXPECT_EQ(api_.Get(kTargetPath), claimed);
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(PhaseOnServer(), Phase::kPending);
  EXPECT_EQ(api_.Get(kTargetPath), claimed);
}

TEST_F(ReconcilerTest, ARetargetedProfileGivesTheOldDeploymentBackFirst) {
  GivenProfileAndTarget(4);
  const Json before = api_.Get(kTargetPath);
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing && !api_.Get(kCanaryPath).is_null(); });
  DriveUntil([&] { return api_.Get(kTargetPath)["spec"]["replicas"] == 2; });
  Json p = api_.Get(kProfilePath);
  p["spec"]["targetRef"]["name"] = "api";  // a Deployment that does not exist (yet)
  p["metadata"]["generation"] = 2;
  api_.Put(kProfilePath, p);
  api_.Sync();
  DriveUntil([&] {
    return api_.Get(kProfilePath)["status"].value("lastTransition", Json::object())
               .value("reason", "") == "TargetChanged";
  });
  EXPECT_TRUE(api_.Get(kCanaryPath).is_null());
  const Json target = api_.Get(kTargetPath);
  EXPECT_EQ(target["spec"]["template"], before["spec"]["template"]);
  EXPECT_EQ(target["spec"]["replicas"], 4);
  EXPECT_FALSE(target["metadata"].contains("annotations"));
  EXPECT_EQ(PhaseOnServer(), Phase::kPending);
  EXPECT_FALSE(api_.Get(kProfilePath)["status"].contains("targetName"));
}

// A Prometheus metric needs an operator that has a Prometheus to ask: without one the
// profile is InvalidSpec saying where the address goes; with one it rolls out, and the
// observer is handed the analysis it judged with (the tracker of Prometheus metrics).
TEST_F(ReconcilerTest, APrometheusMetricNeedsAnOperatorWithAPrometheus) {
  Json p = Profile();
  p["spec"]["rollout"]["analysis"] = Json::parse(R"x({"metrics": [{"name": "checkout",
      "direction": "LowerIsBetter", "prometheus": {"query": "sum(up{pod=~\"{{pods}}\"})"}}]})x");
  api_.Put(kProfilePath, p);
  api_.Put(kTargetPath, Target(4));
  api_.SettleDeployments();
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  const Json status = api_.Get(kProfilePath)["status"];
  EXPECT_EQ(status["phase"], "Failed");
  std::string message;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == "InvalidSpec") message = c.value("message", "");
  }
  EXPECT_THAT(message, HasSubstr("metrics[0] (checkout) is a prometheus metric, and this "
                                 "operator has no Prometheus to ask: set --prometheus-address"));

  ReconcilerOptions with;
  with.prometheus = true;
  reconciler_ = std::make_unique<ProfileReconciler>(
      client_.get(), ReconcilerStores{&api_.profiles_, &api_.deployments_, &api_.hpas_, &api_.pods_},
      recorder_.get(), &verdicts_, &clock_, with, &observer_);
  api_.Sync();
  DriveUntil([&] { return PhaseOnServer() == Phase::kProgressing; });
  std::lock_guard<std::mutex> l(observer_.mu_);
  ASSERT_TRUE(observer_.analysis.has_value());
  ASSERT_EQ(observer_.analysis->metrics.size(), 1u);
  EXPECT_EQ(observer_.analysis->metrics[0].prometheus_query, R"(sum(up{pod=~"{{pods}}"}))");
}

// A profile judged on a cluster template: missing, it is InvalidSpec naming it; created,
// the profile carries on with the template merged and its generation recorded; deleted
// after the promotion, the promoted profile stays Promoted.
TEST_F(ReconcilerTest, AClusterAnalysisTemplateIsMergedRecordedAndNeededOnlyToJudge) {
  kube::Store templates, cluster_templates;
  reconciler_ = std::make_unique<ProfileReconciler>(
      client_.get(),
      ReconcilerStores{&api_.profiles_, &api_.deployments_, &api_.hpas_, &api_.pods_,
                       &templates, &cluster_templates},
      recorder_.get(), &verdicts_, &clock_, ReconcilerOptions{}, &observer_);
  Json p = Profile();
  p["spec"]["rollout"]["analysis"] =
      Json::parse(R"({"templateRef": {"kind": "BoosterClusterAnalysisTemplate", "name": "slo"}})");
  api_.Put(kProfilePath, p);
  api_.Put(kTargetPath, Target(4));
  api_.SettleDeployments();
  api_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  Json status = api_.Get(kProfilePath)["status"];
  EXPECT_EQ(status["phase"], "Failed");
  std::string message;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == "InvalidSpec") message = c.value("message", "");
  }
  EXPECT_THAT(message, HasSubstr("BoosterClusterAnalysisTemplate \"slo\" not found"));
  EXPECT_FALSE(status.contains("analysisTemplate"));

  cluster_templates.Upsert(std::make_shared<const Json>(Json::parse(R"({
      "kind": "BoosterClusterAnalysisTemplate",
      "metadata": {"name": "slo", "generation": 4},
      "spec": {"analysis": {"mode": "Time", "interval": "20s"}}})")));
  DriveUntil([&] { return PhaseOnServer() == Phase::kPromoted; });
  status = api_.Get(kProfilePath)["status"];
  EXPECT_EQ(status["analysisTemplate"], Json::parse(R"({"kind": "BoosterClusterAnalysisTemplate",
                                                        "name": "slo", "generation": 4})"));
  // The stored profile still names the template: the merge is the operator's own copy.
  EXPECT_TRUE(api_.Get(kProfilePath)["spec"]["rollout"]["analysis"].contains("templateRef"));

  cluster_templates.Delete("slo");
  ASSERT_TRUE(Reconcile().ok());
  status = api_.Get(kProfilePath)["status"];
  EXPECT_EQ(status["phase"], "Promoted");
  EXPECT_EQ(status["analysisTemplate"]["generation"], 4);
}

TEST(ProfileKeysForTest, AnAnalysisTemplateConcernsTheProfilesNamingIt) {
  kube::Store profiles;
  Json cluster_user = Profile();
  cluster_user["spec"]["rollout"]["analysis"] =
      Json::parse(R"({"templateRef": {"kind": "BoosterClusterAnalysisTemplate", "name": "slo"}})");
  profiles.Upsert(std::make_shared<const Json>(cluster_user));
  Json ns_user = Profile();
  ns_user["metadata"]["name"] = "api";
  ns_user["spec"]["rollout"]["analysis"] = Json::parse(R"({"templateRef": {"name": "slo"}})");
  profiles.Upsert(std::make_shared<const Json>(ns_user));
  Json elsewhere = ns_user;
  elsewhere["metadata"]["namespace"] = "other";
  profiles.Upsert(std::make_shared<const Json>(elsewhere));
  const Json cluster_template = {{"metadata", {{"name", "slo"}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kClusterAnalysisTemplate, cluster_template),
            std::vector<std::string>{"shop/web"});
  const Json ns_template = {{"metadata", {{"name", "slo"}, {"namespace", "shop"}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kAnalysisTemplate, ns_template),
            std::vector<std::string>{"shop/api"});
  const Json other_name = {{"metadata", {{"name", "latency"}, {"namespace", "shop"}}}};
  EXPECT_TRUE(ProfileKeysFor(profiles, ObjectKind::kAnalysisTemplate, other_name).empty());
}

TEST(ProfileKeysForTest, MapsEveryRelatedObjectToItsProfile) {
  kube::Store profiles;
  profiles.AddIndexer(kTargetIndex, ProfileTargetIndexFunc);
  profiles.Upsert(std::make_shared<const Json>(Profile()));
  Json other = Profile();
  other["metadata"]["name"] = "api";
  other["spec"]["targetRef"]["name"] = "api";
  profiles.Upsert(std::make_shared<const Json>(other));

  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kDeployment, Target(1)),
            std::vector<std::string>{"shop/web"});
  Json canary = {{"metadata",
                  {{"name", "web-booster"},
                   {"namespace", "shop"},
                   {"labels", {{"booster.dev/profile", "web"}}}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kDeployment, canary),
            std::vector<std::string>{"shop/web"});
  Json rs = {{"metadata",
              {{"name", "api-5d9c"},
               {"namespace", "shop"},
               {"ownerReferences", {{{"kind", "Deployment"}, {"name", "api-booster"}}}}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kReplicaSet, rs),
            std::vector<std::string>{"shop/api"});
  // The fresh baseline's ReplicaSets too, by their Deployment's name.
  Json fresh_rs = {{"metadata",
                    {{"name", "api-booster-baseline-7f6b"},
                     {"namespace", "shop"},
                     {"ownerReferences",
                      {{{"kind", "Deployment"}, {"name", "api-booster-baseline"}}}}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kReplicaSet, fresh_rs),
            std::vector<std::string>{"shop/api"});
  Json pod = {{"metadata",
               {{"name", "web-1"},
                {"namespace", "shop"},
                {"annotations", {{"booster.dev/profile", "shop/web"}}}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kPod, pod), std::vector<std::string>{"shop/web"});
  Json hpa = {{"metadata", {{"name", "h"}, {"namespace", "shop"}}},
              {"spec", {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "api"}}}}}};
  EXPECT_EQ(ProfileKeysFor(profiles, ObjectKind::kHpa, hpa), std::vector<std::string>{"shop/api"});
  // Another namespace's Deployment of the same name concerns nobody here.
  Json elsewhere = Target(1);
  elsewhere["metadata"]["namespace"] = "other";
  EXPECT_TRUE(ProfileKeysFor(profiles, ObjectKind::kDeployment, elsewhere).empty());
}

TEST(FreshViewTest, ServesOurWriteUntilTheStoreCatchesUp) {
  kube::Store store;
  auto obj = [](const std::string& rv) {
    return std::make_shared<const Json>(
        Json{{"metadata", {{"name", "a"}, {"namespace", "n"}, {"resourceVersion", rv}}}});
  };
  store.Upsert(obj("1"));
  FreshView view;
  view.Wrote("n/a", FreshView::Version(store, "n/a"), obj("2"));
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "2");
  store.Upsert(obj("2"));
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "2");
  store.Upsert(obj("3"));  // someone else's later write wins
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "3");
  view.Wrote("n/a", FreshView::Version(store, "n/a"), nullptr);  // we deleted it
  EXPECT_EQ(view.Get(store, "n/a"), nullptr);
  store.Delete("n/a");
  EXPECT_EQ(view.Get(store, "n/a"), nullptr);
  view.Wrote("n/a", FreshView::Version(store, "n/a"), obj("9"));  // we created it
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "9");
}

// The watch can deliver our write, and a later one, before the write's answer is back
// (a Deployment patched at 0 replicas gets its status update within milliseconds and
// then stays quiet). The store then holds the newest version, not our answer.
TEST(FreshViewTest, AStoreThatOvertookTheAnswerWins) {
  kube::Store store;
  auto obj = [](const std::string& rv) {
    return std::make_shared<const Json>(
        Json{{"metadata", {{"name", "a"}, {"namespace", "n"}, {"resourceVersion", rv}}}});
  };
  store.Upsert(obj("1"));
  FreshView view;
  const std::string before = FreshView::Version(store, "n/a");  // read before the request
  store.Upsert(obj("2"));  // the watch: our write
  store.Upsert(obj("3"));  // the watch: the controller's status update
  view.Wrote("n/a", before, obj("2"));  // the answer arrives last
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "3");
  EXPECT_EQ((*view.Get(store, "n/a"))["metadata"]["resourceVersion"], "3");
}

}  // namespace
}  // namespace booster::controller
