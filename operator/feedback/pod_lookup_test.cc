#include "operator/feedback/pod_lookup.h"

#include <memory>

#include "gtest/gtest.h"

namespace booster::feedback {
namespace {

kube::Json Pod() {
  return kube::Json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {
      "name": "web-abc", "namespace": "shop", "uid": "uid-1",
      "creationTimestamp": "2026-03-01T10:00:00Z",
      "labels": {"app": "web", "booster.dev/arm": "canary"},
      "annotations": {"booster.dev/profile": "shop/web-boost",
                      "booster.dev/template-hash": "h1"},
      "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "n-uid"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-booster-5d8f",
         "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}]
    },
    "spec": {"nodeName": "node-7", "containers": [{"name": "web", "image": "web:1"}]},
    "status": {"phase": "Running"}
  })");
}

TEST(PodFromJsonTest, ReadsWhatTheChecksNeed) {
  PodInfo p = PodFromJson(Pod());
  EXPECT_EQ(p.pod_namespace, "shop");
  EXPECT_EQ(p.name, "web-abc");
  EXPECT_EQ(p.uid, "uid-1");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_EQ(p.node, "node-7");
  EXPECT_EQ(p.labels.at("booster.dev/arm"), "canary");
  EXPECT_EQ(p.annotations.at("booster.dev/profile"), "shop/web-boost");
  ASSERT_EQ(p.owners.size(), 2u);
  EXPECT_FALSE(p.owners[0].controller);
  EXPECT_EQ(p.owners[1].kind, "ReplicaSet");
  EXPECT_EQ(p.owners[1].name, "web-booster-5d8f");
  EXPECT_TRUE(p.owners[1].controller);
  absl::Time want;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, "2026-03-01T10:00:00Z", &want, nullptr));
  EXPECT_EQ(p.created, want);
}

TEST(PodFromJsonTest, ToleratesMissingAndMistypedFields) {
  kube::Json pod = Pod();
  pod["metadata"]["labels"] = "not an object";
  pod["metadata"]["annotations"]["n"] = 5;
  pod["metadata"]["ownerReferences"] =
      kube::Json::array({1, {{"kind", "ReplicaSet"}, {"controller", "yes"}}});
  pod["metadata"].erase("creationTimestamp");
  pod["spec"].erase("nodeName");  // not scheduled yet
  PodInfo p = PodFromJson(pod);
  EXPECT_TRUE(p.labels.empty());
  EXPECT_EQ(p.annotations.count("n"), 0u);
  ASSERT_EQ(p.owners.size(), 1u);
  EXPECT_FALSE(p.owners[0].controller);
  EXPECT_EQ(p.created, absl::InfinitePast());
  EXPECT_EQ(p.node, "");
  pod["spec"]["nodeName"] = 7;
  EXPECT_EQ(PodFromJson(pod).node, "");
  EXPECT_EQ(PodFromJson(kube::Json()).name, "");
}

TEST(StorePodLookupTest, FindsPodsByNamespaceAndName) {
  kube::Store store{kube::StoreOptions{}};
  store.Upsert(std::make_shared<const kube::Json>(Pod()));
  StorePodLookup lookup(&store);
  std::optional<PodInfo> p = lookup.Find("shop", "web-abc");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->uid, "uid-1");
  EXPECT_FALSE(lookup.Find("shop", "web-xyz"));
  EXPECT_FALSE(lookup.Find("dev", "web-abc"));

  // Used through Authorize, the informer's pod is accepted end to end.
  TokenReviewResult review;
  review.authenticated = true;
  review.username = "system:serviceaccount:shop:default";
  review.extra[kExtraPodName] = {"web-abc"};
  review.extra[kExtraPodUid] = {"uid-1"};
  review.audiences = {kAudience};
  AuthDecision d = Authorize(review, lookup);
  ASSERT_TRUE(d.accepted()) << d.detail;
  EXPECT_EQ(d.identity->arm, Arm::kCanary);
  EXPECT_EQ(d.identity->node, "node-7");  // from the pod's spec.nodeName

  store.Delete("shop/web-abc");
  EXPECT_EQ(Authorize(review, lookup).reason, RejectReason::kPodNotFound);
}

}  // namespace
}  // namespace booster::feedback
