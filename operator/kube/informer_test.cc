#include "operator/kube/informer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::kube {
namespace {

using testing::FakeStreamState;
using testing::FakeTransport;

// Polls `pred` until true or 10 s pass; synchronisation on an observable condition.
bool Eventually(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

Json Cm(const std::string& name, const std::string& rv, bool managed_fields = false) {
  Json j = {{"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}}};
  if (managed_fields) j["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  return j;
}

std::string Event(const char* type, const Json& obj) {
  Json o = obj;
  o["kind"] = "ConfigMap";
  o["apiVersion"] = "v1";
  return Json{{"type", type}, {"object", o}}.dump() + "\n";
}

// A scripted API server: list answers are taken from `lists` in order (the last one
// repeats); every watch gets a fresh stream the test writes into.
class FakeApi {
 public:
  FakeApi() {
    transport_ = new FakeTransport(
        [this](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
          std::lock_guard<std::mutex> l(mu_);
          list_paths_.push_back(r.path);
          if (lists_.empty()) return HttpResponse{500, "no list scripted", ""};
          HttpResponse resp = lists_.front();
          if (lists_.size() > 1) lists_.pop_front();
          return resp;
        },
        [this](const HttpRequest& r) -> absl::StatusOr<StreamResponse> {
          std::lock_guard<std::mutex> l(mu_);
          if (r.path.find("watch=1") == std::string::npos) return ListStream(r);
          watch_paths_.push_back(r.path);
          if (!watch_errors_.empty()) {
            StreamResponse resp;
            resp.status = watch_errors_.front();
            watch_errors_.pop_front();
            resp.error_body = R"({"kind":"Status","reason":"Expired","message":"too old"})";
            return resp;
          }
          auto s = std::make_shared<FakeStreamState>();
          streams_.push_back(s);
          return testing::OkStream(s);
        });
  }

  std::unique_ptr<Transport> TakeTransport() { return std::unique_ptr<Transport>(transport_); }

  void ScriptList(const std::vector<Json>& items, const std::string& rv,
                  const std::string& cont = "") {
    Json list = {{"kind", "ConfigMapList"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"resourceVersion", rv}}},
                 {"items", items}};
    if (!cont.empty()) list["metadata"]["continue"] = cont;
    std::lock_guard<std::mutex> l(mu_);
    lists_.push_back(HttpResponse{200, list.dump(), ""});
  }
  void ScriptListError(int code) {
    std::lock_guard<std::mutex> l(mu_);
    lists_.push_back(HttpResponse{code, "", ""});
  }
  void ScriptWatchError(int code) {
    std::lock_guard<std::mutex> l(mu_);
    watch_errors_.push_back(code);
  }
  void ClearLists() {
    std::lock_guard<std::mutex> l(mu_);
    lists_.clear();
  }

  std::shared_ptr<FakeStreamState> Stream(size_t i) {
    EXPECT_TRUE(Eventually([&] {
      std::lock_guard<std::mutex> l(mu_);
      return streams_.size() > i;
    })) << "watch " << i << " never opened";
    std::lock_guard<std::mutex> l(mu_);
    return streams_.size() > i ? streams_[i] : std::make_shared<FakeStreamState>();
  }
  std::vector<std::string> WatchPaths() {
    std::lock_guard<std::mutex> l(mu_);
    return watch_paths_;
  }
  std::vector<std::string> ListPaths() {
    std::lock_guard<std::mutex> l(mu_);
    return list_paths_;
  }

 private:
  // Lists are read as streams: the scripted answer arrives in 7-byte chunks, so the
  // informer's parser sees items and even tokens split across reads.
  StreamResponse ListStream(const HttpRequest& r) {
    list_paths_.push_back(r.path);
    if (lists_.empty()) return StreamResponse{500, "", "no list scripted", nullptr};
    HttpResponse resp = lists_.front();
    if (lists_.size() > 1) lists_.pop_front();
    if (resp.status != 200) {
      return StreamResponse{resp.status, resp.retry_after, resp.body, nullptr};
    }
    auto s = std::make_shared<FakeStreamState>();
    for (size_t i = 0; i < resp.body.size(); i += 7) s->Push(resp.body.substr(i, 7));
    s->Close();
    return testing::OkStream(s);
  }

  FakeTransport* transport_;  // owned by the client
  std::mutex mu_;
  std::deque<HttpResponse> lists_;
  std::deque<int> watch_errors_;
  std::vector<std::shared_ptr<FakeStreamState>> streams_;
  std::vector<std::string> watch_paths_;
  std::vector<std::string> list_paths_;
};

// Records handler calls as "add ns/a", "update ns/a 3->4", "delete ns/a".
class Recorder {
 public:
  EventHandlers Handlers() {
    return {[this](const ObjectPtr& o) { Push(absl::StrCat("add ", ObjectKey(*o))); },
            [this](const ObjectPtr& a, const ObjectPtr& b) {
              Push(absl::StrCat("update ", ObjectKey(*b), " ",
                                JsonString(*a, "/metadata/resourceVersion"), "->",
                                JsonString(*b, "/metadata/resourceVersion")));
            },
            [this](const ObjectPtr& o) { Push(absl::StrCat("delete ", ObjectKey(*o))); }};
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> l(mu_);
    return events_;
  }
  size_t Size() {
    std::lock_guard<std::mutex> l(mu_);
    return events_.size();
  }

 private:
  void Push(std::string s) {
    std::lock_guard<std::mutex> l(mu_);
    events_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> events_;
};

Config TestConfig() {
  Config c;
  c.server = "https://fake";
  c.qps = 0;
  return c;
}

std::vector<std::string> Keys(Store& s) {
  std::vector<std::string> k = s.ListKeys();
  std::sort(k.begin(), k.end());
  return k;
}

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() : client_(TestConfig(), api_.TakeTransport(), &clock_) {}
  std::unique_ptr<Informer> Make(InformerOptions o = {}) {
    o.seed = 7;
    auto inf = std::make_unique<Informer>(&client_, kConfigMaps, o, &clock_);
    inf->AddEventHandler(rec_.Handlers());
    return inf;
  }
  FakeApi api_;
  FakeClock clock_;
  Client client_;
  Recorder rec_;
};

TEST_F(InformerTest, PagedListThenWatchFromItsResourceVersion) {
  api_.ScriptList({Cm("a", "3", true)}, "10", "page2");
  api_.ScriptList({Cm("b", "4")}, "10");
  InformerOptions o;
  o.page_size = 1;
  o.min_watch_timeout = absl::Minutes(5);
  auto inf = Make(o);
  EXPECT_FALSE(inf->HasSynced());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(absl::Seconds(10)));
  EXPECT_EQ(Keys(inf->store()), (std::vector<std::string>{"ns/a", "ns/b"}));
  ObjectPtr a = inf->store().Get("ns/a");
  EXPECT_FALSE((*a)["metadata"].contains("managedFields")) << "transform drops managedFields";
  EXPECT_EQ(JsonString(*a, "/kind"), "ConfigMap") << "list items get their kind back";
  EXPECT_EQ(JsonString(*a, "/apiVersion"), "v1");
  EXPECT_EQ(rec_.Get(), (std::vector<std::string>{"add ns/a", "add ns/b"}));
  api_.Stream(0);
  std::vector<std::string> lists = api_.ListPaths();
  ASSERT_EQ(lists.size(), 2u);
  // The first list is served from the watch cache (resourceVersion=0), as client-go's is;
  // a continued page never carries a resourceVersion.
  EXPECT_EQ(lists[0], "/api/v1/configmaps?limit=1&resourceVersion=0");
  EXPECT_EQ(lists[1], "/api/v1/configmaps?limit=1&continue=page2");
  std::string w = api_.WatchPaths()[0];
  EXPECT_NE(w.find("resourceVersion=10"), std::string::npos) << w;
  EXPECT_NE(w.find("allowWatchBookmarks=true"), std::string::npos) << w;
  size_t t = w.find("timeoutSeconds=");
  ASSERT_NE(t, std::string::npos);
  int secs = std::stoi(w.substr(t + 15));
  EXPECT_GE(secs, 300);
  EXPECT_LE(secs, 600);
  inf->Stop();
}

TEST_F(InformerTest, WatchEventsUpdateStoreAndHandlers) {
  api_.ScriptList({Cm("a", "3")}, "10");
  auto inf = Make();
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(absl::Seconds(10)));
  auto s = api_.Stream(0);
  s->Push(Event("ADDED", Cm("b", "11")));
  // An event split across chunks.
  std::string mod = Event("MODIFIED", Cm("a", "12", true));
  s->Push(mod.substr(0, 20));
  s->Push(mod.substr(20));
  s->Push(Event("DELETED", Cm("b", "13")));
  s->Push(Json{{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "20"}}}}}}
              .dump() +
          "\n");
  ASSERT_TRUE(Eventually([&] { return inf->LastResourceVersion() == "20"; }));
  EXPECT_EQ(rec_.Get(), (std::vector<std::string>{"add ns/a", "add ns/b", "update ns/a 3->12",
                                                  "delete ns/b"}));
  EXPECT_EQ(Keys(inf->store()), (std::vector<std::string>{"ns/a"}));
  EXPECT_FALSE((*inf->store().Get("ns/a"))["metadata"].contains("managedFields"));
  // The server closes the watch (timeout): the informer re-watches from the bookmark.
  s->Close();
  api_.Stream(1);
  EXPECT_NE(api_.WatchPaths()[1].find("resourceVersion=20"), std::string::npos);
  EXPECT_EQ(inf->Relists(), 0);
  EXPECT_EQ(api_.ListPaths().size(), 1u) << "a normal close does not relist";
  inf->Stop();
}

TEST_F(InformerTest, GoneRelistsAndEmitsDeletesForVanishedObjects) {
  api_.ScriptList({Cm("keep", "1"), Cm("change", "2"), Cm("vanish", "3")}, "10");
  auto inf = Make();
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(absl::Seconds(10)));
  api_.ClearLists();
  // While we were away: "vanish" deleted, "change" modified, "new" created.
  api_.ScriptList({Cm("keep", "1"), Cm("change", "25"), Cm("new", "26")}, "30");
  auto s = api_.Stream(0);
  s->Push(Json{{"type", "ERROR"},
               {"object",
                {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}, {"message", "gone"}}}}
              .dump() +
          "\n");
  api_.Stream(1);
  EXPECT_EQ(inf->Relists(), 1);
  EXPECT_EQ(Keys(inf->store()), (std::vector<std::string>{"ns/change", "ns/keep", "ns/new"}));
  std::vector<std::string> ev = rec_.Get();
  // client-go's order: the listed objects in list order (unchanged ones skipped), then
  // deletes for those the list no longer holds.
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(ev.begin() + 3, ev.end()),
            (std::vector<std::string>{"update ns/change 2->25", "add ns/new",
                                      "delete ns/vanish"}));
  // The relist after 410 is a consistent read, not one from the watch cache.
  ASSERT_EQ(api_.ListPaths().size(), 2u);
  EXPECT_EQ(api_.ListPaths()[1], "/api/v1/configmaps?limit=500");
  EXPECT_NE(api_.WatchPaths()[1].find("resourceVersion=30"), std::string::npos);
  inf->Stop();
}

TEST_F(InformerTest, GoneWhenOpeningTheWatchAlsoRelists) {
  api_.ScriptList({Cm("a", "1")}, "10");
  api_.ScriptWatchError(410);
  auto inf = Make();
  inf->Start();
  api_.Stream(0);  // the watch after the relist
  EXPECT_EQ(inf->Relists(), 1);
  EXPECT_EQ(api_.ListPaths().size(), 2u);
  inf->Stop();
}

TEST_F(InformerTest, ListErrorsBackOffExponentially) {
  api_.ScriptListError(500);
  api_.ScriptListError(500);
  api_.ScriptList({Cm("a", "1")}, "10");
  InformerOptions o;
  o.backoff_initial = absl::Seconds(1);
  auto inf = Make(o);
  inf->Start();
  ASSERT_TRUE(Eventually([&] { return api_.ListPaths().size() == 1; }));
  EXPECT_FALSE(inf->HasSynced());
  // Moves the fake clock in 100 ms steps until the informer lists again and returns how
  // much clock time that took. The informer may take its deadline from the clock a little
  // after the failed request is recorded, which can only lengthen the measured wait, so
  // the lower bounds below cannot pass by a race.
  auto clock_time_until_list = [&](size_t lists) {
    absl::Duration advanced = absl::ZeroDuration();
    while (api_.ListPaths().size() < lists && advanced < absl::Seconds(20)) {
      clock_.Advance(absl::Milliseconds(100));
      advanced += absl::Milliseconds(100);
      std::this_thread::sleep_for(std::chrono::milliseconds(60));  // its 50 ms clock poll
    }
    return advanced;
  };
  // First retry after the initial 1 s (jitter only lengthens it), second after twice that.
  absl::Duration first = clock_time_until_list(2);
  ASSERT_EQ(api_.ListPaths().size(), 2u) << "no retry after a failed list";
  EXPECT_GE(first, absl::Seconds(1)) << "retried before the backoff";
  absl::Duration second = clock_time_until_list(3);
  ASSERT_EQ(api_.ListPaths().size(), 3u) << "no second retry";
  EXPECT_GE(second, absl::Seconds(2)) << "the backoff did not double";
  ASSERT_TRUE(inf->WaitForSync(absl::Seconds(10)));
  EXPECT_EQ(api_.ListPaths().size(), 3u);
  inf->Stop();
}

TEST_F(InformerTest, MalformedStreamRewatchesFromLastGoodVersion) {
  api_.ScriptList({Cm("a", "1")}, "10");
  auto inf = Make();
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(absl::Seconds(10)));
  auto s = api_.Stream(0);
  s->Push(Event("MODIFIED", Cm("a", "11")) + "{garbage\n");
  ASSERT_TRUE(Eventually([&] { return inf->LastResourceVersion() == "11"; }));
  // Backoff (800 ms) on our clock, then a watch from rv 11. The informer may start its
  // backoff sleep after any given Advance(), so keep moving the clock until it re-watches.
  ASSERT_TRUE(Eventually([&] {
    clock_.Advance(absl::Milliseconds(100));
    return api_.WatchPaths().size() >= 2;
  }));
  EXPECT_NE(api_.WatchPaths()[1].find("resourceVersion=11"), std::string::npos);
  EXPECT_EQ(inf->Relists(), 0);
  inf->Stop();
}

TEST_F(InformerTest, StopCancelsABlockedWatch) {
  api_.ScriptList({}, "10");
  auto inf = Make();
  inf->Start();
  auto s = api_.Stream(0);
  inf->Stop();
  EXPECT_TRUE(s->cancelled());
}

TEST_F(InformerTest, ResumeWatchesFromTheSavedVersionAndRelistsIfItIsGone) {
  api_.ScriptWatchError(410);
  api_.ScriptList({Cm("kept", "5"), Cm("fresh", "8")}, "40");
  auto inf = Make();
  inf->Resume({Cm("kept", "5"), Cm("stale", "2")}, "3");
  EXPECT_TRUE(inf->HasSynced());
  inf->Start();
  api_.Stream(0);
  std::vector<std::string> paths = api_.WatchPaths();
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_NE(paths[0].find("resourceVersion=3"), std::string::npos) << "no list before the watch";
  EXPECT_NE(paths[1].find("resourceVersion=40"), std::string::npos);
  EXPECT_EQ(inf->Relists(), 1);
  EXPECT_EQ(Keys(inf->store()), (std::vector<std::string>{"ns/fresh", "ns/kept"}));
  EXPECT_EQ(rec_.Get(), (std::vector<std::string>{"add ns/kept", "add ns/stale", "add ns/fresh",
                                                  "delete ns/stale"}));
  inf->Stop();
}

TEST(DropManagedFieldsTest, OnlyManagedFieldsGo) {
  Json j = Cm("a", "1", true);
  j["metadata"]["labels"] = {{"x", "y"}};
  DropManagedFields(&j);
  EXPECT_FALSE(j["metadata"].contains("managedFields"));
  EXPECT_TRUE(j["metadata"].contains("labels"));
  Json empty = Json::object();
  DropManagedFields(&empty);
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace booster::kube
