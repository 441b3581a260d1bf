#include "operator/kube/store.h"

#include <algorithm>
#include <thread>

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

ObjectPtr Pod(const std::string& ns, const std::string& name, const std::string& rv,
              Json labels = Json::object(), const std::string& owner = "") {
  Json p = {{"kind", "Pod"},
            {"metadata",
             {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"labels", labels}}}};
  if (!owner.empty()) {
    p["metadata"]["ownerReferences"] = Json::array({{{"uid", owner}, {"kind", "ReplicaSet"}}});
  }
  return std::make_shared<const Json>(std::move(p));
}

std::vector<std::string> Names(std::vector<ObjectPtr> v) {
  std::vector<std::string> out;
  for (auto& o : v) out.push_back(ObjectKey(*o));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StoreTest, KeysAreNamespaceSlashName) {
  EXPECT_EQ(ObjectKey(*Pod("ns", "a", "1")), "ns/a");
  EXPECT_EQ(ObjectKey(Json{{"metadata", {{"name", "node-1"}}}}), "node-1");
}

TEST(StoreTest, UpsertGetDelete) {
  Store s;
  EXPECT_EQ(s.Upsert(Pod("ns", "a", "1")), nullptr);
  ObjectPtr old = s.Upsert(Pod("ns", "a", "2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(JsonString(*old, "/metadata/resourceVersion"), "1");
  EXPECT_EQ(JsonString(*s.Get("ns/a"), "/metadata/resourceVersion"), "2");
  EXPECT_EQ(s.Size(), 1u);
  EXPECT_NE(s.Delete("ns/a"), nullptr);
  EXPECT_EQ(s.Delete("ns/a"), nullptr);
  EXPECT_EQ(s.Get("ns/a"), nullptr);
}

TEST(StoreTest, IndexesFollowUpdatesAndDeletes) {
  Store s;
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  s.AddIndexer(kLabelIndex, LabelIndexFunc);
  s.AddIndexer(kOwnerIndex, OwnerIndexFunc);
  s.Upsert(Pod("a", "p1", "1", {{"app", "web"}}, "rs-1"));
  s.Upsert(Pod("a", "p2", "1", {{"app", "db"}}, "rs-2"));
  s.Upsert(Pod("b", "p3", "1", {{"app", "web"}}, "rs-1"));
  EXPECT_EQ(Names(s.ByIndex(kNamespaceIndex, "a")), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(Names(s.ByIndex(kLabelIndex, "app=web")),
            (std::vector<std::string>{"a/p1", "b/p3"}));
  EXPECT_EQ(Names(s.ByIndex(kOwnerIndex, "rs-1")), (std::vector<std::string>{"a/p1", "b/p3"}));
  // Relabel p1: it must leave the old index value.
  s.Upsert(Pod("a", "p1", "2", {{"app", "db"}}, "rs-1"));
  EXPECT_EQ(Names(s.ByIndex(kLabelIndex, "app=web")), (std::vector<std::string>{"b/p3"}));
  EXPECT_EQ(Names(s.ByIndex(kLabelIndex, "app=db")), (std::vector<std::string>{"a/p1", "a/p2"}));
  s.Delete("b/p3");
  EXPECT_TRUE(s.ByIndex(kLabelIndex, "app=web").empty());
  EXPECT_TRUE(s.ByIndex("no-such-index", "x").empty());
}

TEST(StoreTest, IndexerAddedLateIndexesExistingObjects) {
  Store s;
  s.Upsert(Pod("a", "p1", "1"));
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "a").size(), 1u);
}

TEST(StoreTest, ReplaceReportsAddsUpdatesAndDeletes) {
  Store s;
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  s.Upsert(Pod("a", "keep", "1"));
  s.Upsert(Pod("a", "change", "1"));
  s.Upsert(Pod("a", "vanish", "1"));
  Store::Delta d = s.Replace({Pod("a", "keep", "1"), Pod("a", "change", "5"), Pod("a", "new", "6")});
  EXPECT_EQ(Names(d.added), (std::vector<std::string>{"a/new"}));
  EXPECT_EQ(Names(d.deleted), (std::vector<std::string>{"a/vanish"}));
  ASSERT_EQ(d.updated.size(), 1u);
  EXPECT_EQ(JsonString(*d.updated[0].first, "/metadata/resourceVersion"), "1");
  EXPECT_EQ(JsonString(*d.updated[0].second, "/metadata/resourceVersion"), "5");
  EXPECT_EQ(Names(s.List()), (std::vector<std::string>{"a/change", "a/keep", "a/new"}));
  EXPECT_EQ(Names(s.ByIndex(kNamespaceIndex, "a")),
            (std::vector<std::string>{"a/change", "a/keep", "a/new"}));
}

TEST(StoreTest, ReadersKeepTheirSnapshot) {
  Store s;
  s.Upsert(Pod("a", "p", "1"));
  ObjectPtr held = s.Get("a/p");
  s.Upsert(Pod("a", "p", "2"));
  s.Delete("a/p");
  EXPECT_EQ(JsonString(*held, "/metadata/resourceVersion"), "1");
}

TEST(StoreTest, ConcurrentWritersAndReaders) {
  Store s;
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        s.Upsert(Pod("ns", "p" + std::to_string(t) + "-" + std::to_string(i), "1"));
        s.ByIndex(kNamespaceIndex, "ns");
        if (i % 2 == 0) s.Delete("ns/p" + std::to_string(t) + "-" + std::to_string(i));
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(s.Size(), 1000u);
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "ns").size(), 1000u);
}

}  // namespace
}  // namespace booster::kube
