#include "operator/feedback/authorize.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace booster::feedback {
namespace {

class MapPods final : public PodLookup {
 public:
  std::optional<PodInfo> Find(absl::string_view ns, absl::string_view name) const override {
    ++finds;
    auto it = pods.find(std::string(ns) + "/" + std::string(name));
    if (it == pods.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, PodInfo> pods;
  mutable int finds = 0;
};

TokenReviewResult GoodReview() {
  TokenReviewResult r;
  r.authenticated = true;
  r.username = "system:serviceaccount:shop:web";
  r.uid = "sa-uid";
  r.groups = {"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"};
  r.extra[kExtraPodName] = {"web-abc"};
  r.extra[kExtraPodUid] = {"uid-1"};
  r.extra["authentication.kubernetes.io/credential-id"] = {"JTI=xyz"};
  r.audiences = {"booster-operator"};
  return r;
}

PodInfo GoodPod() {
  PodInfo p;
  p.pod_namespace = "shop";
  p.name = "web-abc";
  p.uid = "uid-1";
  p.phase = "Running";
  p.labels = {{"app", "web"}, {kArmLabel, "canary"}};
  p.annotations = {{kProfileAnnotation, "shop/web-boost"}, {kTemplateHashAnnotation, "h1"}};
  p.owners = {{"ReplicaSet", "web-booster-5d8f", "rs-uid", true}};
  p.created = absl::FromUnixSeconds(1'700'000'000);
  return p;
}

// Every row changes one thing of an otherwise accepted (review, pod) pair.
struct Row {
  const char* name;
  std::function<void(TokenReviewResult*, PodInfo*, bool* pod_exists)> mutate;
  std::optional<RejectReason> want;  // nullopt: accepted
};

const std::vector<Row>& Table() {
  using R = RejectReason;
  static const std::vector<Row> rows = {
      {"valid", [](TokenReviewResult*, PodInfo*, bool*) {}, std::nullopt},
      {"not_authenticated", [](TokenReviewResult* r, PodInfo*, bool*) { r->authenticated = false; },
       R::kUnauthenticated},
      {"no_audiences", [](TokenReviewResult* r, PodInfo*, bool*) { r->audiences.clear(); },
       R::kWrongAudience},
      {"other_audience",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->audiences = {"https://kubernetes.default"}; },
       R::kWrongAudience},
      {"audience_among_several",
       [](TokenReviewResult* r, PodInfo*, bool*) {
         r->audiences = {"https://kubernetes.default", "booster-operator"};
       },
       std::nullopt},
      {"user_not_sa", [](TokenReviewResult* r, PodInfo*, bool*) { r->username = "alice"; },
       R::kNotServiceAccount},
      {"node_user",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->username = "system:node:worker-1"; },
       R::kNotServiceAccount},
      {"sa_without_name",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->username = "system:serviceaccount:shop:"; },
       R::kNotServiceAccount},
      {"sa_extra_colon",
       [](TokenReviewResult* r, PodInfo*, bool*) {
         r->username = "system:serviceaccount:shop:web:x";
       },
       R::kNotServiceAccount},
      {"no_pod_name_extra",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->extra.erase(kExtraPodName); },
       R::kNotPodBound},
      {"no_pod_uid_extra",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->extra.erase(kExtraPodUid); },
       R::kNotPodBound},
      {"empty_pod_name_extra",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->extra[kExtraPodName] = {""}; },
       R::kNotPodBound},
      {"two_pod_names",
       [](TokenReviewResult* r, PodInfo*, bool*) {
         r->extra[kExtraPodName] = {"web-abc", "x"};
       },
       R::kNotPodBound},
      {"legacy_secret_token", [](TokenReviewResult* r, PodInfo*, bool*) { r->extra.clear(); },
       R::kNotPodBound},
      {"pod_missing", [](TokenReviewResult*, PodInfo*, bool* exists) { *exists = false; },
       R::kPodNotFound},
      {"pod_in_other_namespace",
       [](TokenReviewResult* r, PodInfo*, bool*) { r->username = "system:serviceaccount:dev:web"; },
       R::kPodNotFound},
      {"pod_succeeded", [](TokenReviewResult*, PodInfo* p, bool*) { p->phase = "Succeeded"; },
       R::kPodNotFound},
      {"pod_failed", [](TokenReviewResult*, PodInfo* p, bool*) { p->phase = "Failed"; },
       R::kPodNotFound},
      {"pod_pending", [](TokenReviewResult*, PodInfo* p, bool*) { p->phase = "Pending"; },
       std::nullopt},
      {"pod_recreated", [](TokenReviewResult*, PodInfo* p, bool*) { p->uid = "uid-2"; },
       R::kPodUidMismatch},
      {"no_owner", [](TokenReviewResult*, PodInfo* p, bool*) { p->owners.clear(); },
       R::kNotEnrolled},
      {"owner_not_controller",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->owners[0].controller = false; },
       R::kNotEnrolled},
      {"owned_by_job", [](TokenReviewResult*, PodInfo* p, bool*) { p->owners[0].kind = "Job"; },
       R::kNotEnrolled},
      {"no_arm_label", [](TokenReviewResult*, PodInfo* p, bool*) { p->labels.erase(kArmLabel); },
       R::kNotEnrolled},
      {"arm_promoted",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->labels[kArmLabel] = "promoted"; },
       R::kNotEnrolled},
      {"arm_wrong_case",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->labels[kArmLabel] = "Canary"; },
       R::kNotEnrolled},
      {"arm_baseline",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->labels[kArmLabel] = "baseline"; },
       std::nullopt},
      {"no_profile",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->annotations.erase(kProfileAnnotation); },
       R::kNotEnrolled},
      {"profile_without_namespace",
       [](TokenReviewResult*, PodInfo* p, bool*) {
         p->annotations[kProfileAnnotation] = "web-boost";
       },
       R::kNotEnrolled},
      {"profile_empty_name",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->annotations[kProfileAnnotation] = "shop/"; },
       R::kNotEnrolled},
      {"profile_three_parts",
       [](TokenReviewResult*, PodInfo* p, bool*) {
         p->annotations[kProfileAnnotation] = "shop/a/b";
       },
       R::kNotEnrolled},
      {"profile_of_other_namespace",
       [](TokenReviewResult*, PodInfo* p, bool*) {
         p->annotations[kProfileAnnotation] = "payments/web-boost";
       },
       R::kNotEnrolled},
      {"no_template_hash",
       [](TokenReviewResult*, PodInfo* p, bool*) { p->annotations.erase(kTemplateHashAnnotation); },
       std::nullopt},
  };
  return rows;
}

TEST(AuthorizeTest, EveryCheckDecidesWithItsReason) {
  std::set<RejectReason> seen;
  for (const Row& row : Table()) {
    SCOPED_TRACE(row.name);
    TokenReviewResult review = GoodReview();
    PodInfo pod = GoodPod();
    bool exists = true;
    row.mutate(&review, &pod, &exists);
    MapPods pods;
    if (exists) pods.pods["shop/web-abc"] = pod;
    AuthDecision d = Authorize(review, pods);
    if (!row.want) {
      EXPECT_TRUE(d.accepted()) << RejectReasonName(d.reason) << ": " << d.detail;
      continue;
    }
    ASSERT_FALSE(d.accepted());
    EXPECT_EQ(d.reason, *row.want) << RejectReasonName(d.reason) << ": " << d.detail;
    EXPECT_FALSE(d.detail.empty());
    seen.insert(d.reason);
  }
  // Every reason Authorize() can give has a row (the other two are the server's).
  for (RejectReason r : kRejectReasons) {
    if (r == RejectReason::kMissingToken || r == RejectReason::kTokenReviewUnavailable) continue;
    EXPECT_TRUE(seen.count(r)) << RejectReasonName(r) << " has no row";
  }
}

TEST(AuthorizeTest, FirstFailingCheckDecides) {
  // Unauthenticated and everything else wrong too: the earliest check wins, and the pod
  // is not even looked up.
  TokenReviewResult review;
  review.authenticated = false;
  review.error = "token has expired";
  MapPods pods;
  AuthDecision d = Authorize(review, pods);
  EXPECT_EQ(d.reason, RejectReason::kUnauthenticated);
  EXPECT_NE(d.detail.find("token has expired"), std::string::npos);
  EXPECT_EQ(pods.finds, 0);

  review = GoodReview();
  review.audiences.clear();
  review.username = "alice";
  EXPECT_EQ(Authorize(review, pods).reason, RejectReason::kWrongAudience);
}

TEST(AuthorizeTest, IdentityComesFromTheTokenAndThePod) {
  MapPods pods;
  PodInfo pod = GoodPod();
  pod.node = "node-7";
  pods.pods["shop/web-abc"] = pod;
  AuthDecision d = Authorize(GoodReview(), pods);
  ASSERT_TRUE(d.accepted()) << d.detail;
  const AgentIdentity& id = *d.identity;
  EXPECT_EQ(id.pod_namespace, "shop");
  EXPECT_EQ(id.pod_name, "web-abc");
  EXPECT_EQ(id.pod_uid, "uid-1");
  EXPECT_EQ(id.service_account, "web");
  EXPECT_EQ(id.arm, Arm::kCanary);
  EXPECT_EQ(id.profile, "shop/web-boost");
  EXPECT_EQ(id.owner, "web-booster-5d8f");
  EXPECT_EQ(id.template_hash, "h1");
  EXPECT_EQ(id.pod_created, pod.created);
  EXPECT_EQ(id.node, "node-7");
  EXPECT_EQ(id.PodKey(), "shop/web-abc");
}

TEST(AuthorizeTest, CustomAudience) {
  MapPods pods;
  pods.pods["shop/web-abc"] = GoodPod();
  EXPECT_EQ(Authorize(GoodReview(), pods, "other").reason, RejectReason::kWrongAudience);
  TokenReviewResult r = GoodReview();
  r.audiences = {"other"};
  EXPECT_TRUE(Authorize(r, pods, "other").accepted());
}

TEST(AuthorizeTest, ServiceAccountUsername) {
  auto sa = ParseServiceAccountUsername("system:serviceaccount:ns:name");
  ASSERT_TRUE(sa);
  EXPECT_EQ(sa->first, "ns");
  EXPECT_EQ(sa->second, "name");
  EXPECT_FALSE(ParseServiceAccountUsername(""));
  EXPECT_FALSE(ParseServiceAccountUsername("system:serviceaccount:ns"));
  EXPECT_FALSE(ParseServiceAccountUsername("system:serviceaccount::name"));
  EXPECT_FALSE(ParseServiceAccountUsername("system:serviceaccounts:ns:name"));
  EXPECT_FALSE(ParseServiceAccountUsername("System:serviceaccount:ns:name"));
}

TEST(AuthorizeTest, ReasonNamesAreDistinctTokens) {
  std::set<std::string> names;
  for (RejectReason r : kRejectReasons) {
    std::string n(RejectReasonName(r));
    EXPECT_EQ(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos) << n;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kRejectReasons.size());
  EXPECT_EQ(RejectReasonName(RejectReason::kNotEnrolled), "not_enrolled");
  EXPECT_EQ(RejectReasonName(RejectReason::kTokenReviewUnavailable), "tokenreview_unavailable");
}

TEST(ArmTest, ParsesOnlyTheTwoArms) {
  EXPECT_EQ(ParseArm("baseline"), Arm::kBaseline);
  EXPECT_EQ(ParseArm("canary"), Arm::kCanary);
  EXPECT_FALSE(ParseArm("promoted"));
  EXPECT_FALSE(ParseArm(""));
  EXPECT_FALSE(ParseArm("CANARY"));
  for (Arm a : kArms) EXPECT_EQ(ParseArm(ArmName(a)), a);
}

}  // namespace
}  // namespace booster::feedback
