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

// Every behaviour holds for both forms of the store: parsed trees and compact CBOR bytes.
class StoreTest : public ::testing::TestWithParam<bool> {
 protected:
  StoreOptions Options() const { return StoreOptions{.compact = GetParam()}; }
};

INSTANTIATE_TEST_SUITE_P(Forms, StoreTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Compact" : "Trees";
                         });

TEST(StoreKeyTest, KeysAreNamespaceSlashName) {
  EXPECT_EQ(ObjectKey(*Pod("ns", "a", "1")), "ns/a");
  EXPECT_EQ(ObjectKey(Json{{"metadata", {{"name", "node-1"}}}}), "node-1");
}

TEST_P(StoreTest, UpsertGetDelete) {
  Store s(Options());
  EXPECT_EQ(s.Upsert(Pod("ns", "a", "1")), nullptr);
  ObjectPtr old = s.Upsert(Pod("ns", "a", "2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(JsonString(*old, "/metadata/resourceVersion"), "1");
  EXPECT_EQ(JsonString(*s.Get("ns/a"), "/metadata/resourceVersion"), "2");
  EXPECT_EQ(s.ResourceVersion("ns/a"), "2");
  EXPECT_EQ(s.Size(), 1u);
  EXPECT_NE(s.Delete("ns/a"), nullptr);
  EXPECT_EQ(s.Delete("ns/a"), nullptr);
  EXPECT_EQ(s.Get("ns/a"), nullptr);
  EXPECT_EQ(s.ResourceVersion("ns/a"), "");
}

TEST_P(StoreTest, IndexesFollowUpdatesAndDeletes) {
  Store s(Options());
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

TEST_P(StoreTest, IndexerAddedLateIndexesExistingObjects) {
  Store s(Options());
  s.Upsert(Pod("a", "p1", "1"));
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "a").size(), 1u);
}

TEST_P(StoreTest, ReplaceReportsAddsUpdatesAndDeletes) {
  Store s(Options());
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

TEST_P(StoreTest, ReadersKeepTheirSnapshot) {
  Store s(Options());
  s.Upsert(Pod("a", "p", "1"));
  ObjectPtr held = s.Get("a/p");
  s.Upsert(Pod("a", "p", "2"));
  s.Delete("a/p");
  EXPECT_EQ(JsonString(*held, "/metadata/resourceVersion"), "1");
}

TEST_P(StoreTest, ConcurrentWritersAndReaders) {
  Store s(Options());
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        s.Upsert(Pod("ns", "p" + std::to_string(t) + "-" + std::to_string(i), "1"));
        // Reads race the writes; a full index read decodes every object, so not each time.
        s.Get("ns/p0-0");
        if (i % 50 == 0) s.ByIndex(kNamespaceIndex, "ns");
        if (i % 2 == 0) s.Delete("ns/p" + std::to_string(t) + "-" + std::to_string(i));
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(s.Size(), 1000u);
  EXPECT_EQ(s.ByIndex(kNamespaceIndex, "ns").size(), 1000u);
}

TEST_P(StoreTest, UpsertIfChangedSkipsTheSameResourceVersion) {
  Store s(Options());
  s.AddIndexer(kLabelIndex, LabelIndexFunc);
  Store::Upserted u = s.UpsertIfChanged(Pod("a", "p", "1", {{"app", "web"}}));
  EXPECT_TRUE(u.stored);
  EXPECT_EQ(u.old, nullptr);
  // Same resourceVersion: left alone, even if the content differs (it cannot, on a server).
  u = s.UpsertIfChanged(Pod("a", "p", "1", {{"app", "db"}}));
  EXPECT_FALSE(u.stored);
  EXPECT_EQ(Names(s.ByIndex(kLabelIndex, "app=web")), (std::vector<std::string>{"a/p"}));
  u = s.UpsertIfChanged(Pod("a", "p", "2", {{"app", "db"}}));
  EXPECT_TRUE(u.stored);
  ASSERT_NE(u.old, nullptr);
  EXPECT_EQ(JsonString(*u.old, "/metadata/resourceVersion"), "1");
  EXPECT_TRUE(s.ByIndex(kLabelIndex, "app=web").empty());
  EXPECT_EQ(Names(s.ByIndex(kLabelIndex, "app=db")), (std::vector<std::string>{"a/p"}));
}

TEST_P(StoreTest, DeleteExceptRemovesWhatIsNotKept) {
  Store s(Options());
  s.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  s.Upsert(Pod("a", "keep", "1"));
  s.Upsert(Pod("a", "z-gone", "1"));
  s.Upsert(Pod("b", "gone", "1"));
  std::vector<ObjectPtr> gone = s.DeleteExcept({"a/keep", "a/never-stored"});
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(ObjectKey(*gone[0]), "a/z-gone") << "in key order";
  EXPECT_EQ(ObjectKey(*gone[1]), "b/gone");
  EXPECT_EQ(s.ListKeys(), (std::vector<std::string>{"a/keep"}));
  EXPECT_TRUE(s.ByIndex(kNamespaceIndex, "b").empty());
}

TEST_P(StoreTest, ObjectsReadBackEqualToWhatWasStored) {
  Store s(Options());
  Json pod = {{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata", {{"namespace", "a"}, {"name", "p"}, {"resourceVersion", "9"}}},
              {"spec",
               {{"priority", -5},
                {"activeDeadlineSeconds", 18446744073709551615u},
                {"ratio", 0.25},
                {"hostNetwork", true},
                {"nodeName", nullptr},
                {"containers", Json::array({{{"name", "c"}, {"args", {"x", "\u00e9\n"}}}})},
                {"volumes", Json::array()},
                {"empty", Json::object()}}}};
  s.Upsert(std::make_shared<const Json>(pod));
  ASSERT_NE(s.Get("a/p"), nullptr);
  EXPECT_EQ(*s.Get("a/p"), pod);
  ASSERT_EQ(s.List().size(), 1u);
  EXPECT_EQ(*s.List()[0], pod);
  if (GetParam()) {
    // The compact form is what makes the informer's cache small: well under the size of
    // the object's JSON text.
    EXPECT_GT(s.CompactBytes(), 0u);
    EXPECT_LT(s.CompactBytes(), pod.dump().size());
    s.Delete("a/p");
    EXPECT_EQ(s.CompactBytes(), 0u);
  } else {
    EXPECT_EQ(s.Get("a/p"), s.Get("a/p")) << "a store of trees hands out the stored object";
  }
}

}  // namespace
}  // namespace booster::kube
