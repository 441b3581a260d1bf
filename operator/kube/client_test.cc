#include "operator/kube/client.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "operator/kube/api_status.h"
#include "operator/kube/fake_transport.h"

namespace booster::kube {
namespace {

using testing::FakeTransport;

HttpResponse Ok(const Json& j) { return HttpResponse{200, j.dump(), ""}; }

std::string Header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

Config TestConfig() {
  Config c;
  c.server = "https://127.0.0.1:1";
  c.token = "secret";
  c.qps = 0;
  return c;
}

TEST(ResourcePathTest, CoreGroupsCrdsSubresources) {
  EXPECT_EQ(ResourcePath(kConfigMaps, "ns", "a"), "/api/v1/namespaces/ns/configmaps/a");
  EXPECT_EQ(ResourcePath(kConfigMaps, ""), "/api/v1/configmaps");
  EXPECT_EQ(ResourcePath(kDeployments, "ns", "web", "scale"),
            "/apis/apps/v1/namespaces/ns/deployments/web/scale");
  Resource profiles{"booster.dev", "v1alpha1", "boosterprofiles", true};
  EXPECT_EQ(ResourcePath(profiles, "ns", "p", "status"),
            "/apis/booster.dev/v1alpha1/namespaces/ns/boosterprofiles/p/status");
  EXPECT_EQ(ResourcePath(kNamespaces, "ignored", "kube-system"), "/api/v1/namespaces/kube-system");
  EXPECT_EQ(profiles.ApiVersion(), "booster.dev/v1alpha1");
  EXPECT_EQ(kPods.ApiVersion(), "v1");
}

TEST(ResourcePathTest, QueryEscape) {
  EXPECT_EQ(QueryEscape("app=web,tier!=db"), "app%3Dweb%2Ctier%21%3Ddb");
  EXPECT_EQ(QueryEscape("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(QueryEscape("safe-._~09AZaz"), "safe-._~09AZaz");
}

TEST(ClientTest, GetSendsTokenAndParses) {
  auto* t = new FakeTransport([](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    return Ok({{"metadata", {{"name", "a"}}}});
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  absl::StatusOr<Json> got = c.Get(kConfigMaps, "ns", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(JsonString(*got, "/metadata/name"), "a");
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ns/configmaps/a");
  EXPECT_EQ(Header(reqs[0], "Authorization"), "Bearer secret");
}

TEST(ClientTest, ErrorsCarryTheApiStatus) {
  auto* t = new FakeTransport([](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (r.method == "GET") {
      return HttpResponse{404, R"({"kind":"Status","reason":"NotFound","message":"nope"})", ""};
    }
    return HttpResponse{409, R"({"kind":"Status","reason":"Conflict","message":"modified"})", ""};
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  EXPECT_TRUE(absl::IsNotFound(c.Get(kConfigMaps, "ns", "a").status()));
  EXPECT_TRUE(IsConflict(c.Update(kConfigMaps, "ns", {{"metadata", {{"name", "a"}}}}).status()));
}

TEST(ClientTest, TransportErrorsPassThrough) {
  auto* t = new FakeTransport([](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    return absl::UnavailableError("connection refused");
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  EXPECT_TRUE(absl::IsUnavailable(c.Get(kConfigMaps, "ns", "a").status()));
}

// A RequestDeadline caps each request's timeout at the time left, skips a retry that
// would end past it, and fails a request unsent once it has passed; without one the
// configured timeout applies.
TEST(ClientTest, RequestsHonourTheCallersDeadline) {
  FakeClock clock;
  int answers = 0;
  auto* t = new FakeTransport([&](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    if (++answers > 2) return Ok(Json::object());
    return HttpResponse{429, R"({"kind":"Status","reason":"TooManyRequests"})", "1"};
  });
  Config config = TestConfig();
  config.request_timeout = absl::Seconds(30);
  Client c(config, std::unique_ptr<Transport>(t), &clock);
  {
    RequestDeadline bound(clock.Now() + absl::Milliseconds(1500));
    {
      RequestDeadline looser(clock.Now() + absl::Seconds(60));
      EXPECT_EQ(*RequestDeadline::Current(), clock.Now() + absl::Milliseconds(1500))
          << "an inner scope never extends the outer deadline";
    }
    // 429 with Retry-After 1 s: retried at +1 s with 0.5 s left, then not again (the next
    // retry would start past the deadline).
    std::thread advance([&] {
      while (clock.Sleepers() == 0) std::this_thread::yield();
      clock.Advance(absl::Seconds(1));
    });
    absl::Status s = c.Get(kConfigMaps, "ns", "a").status();
    advance.join();
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    std::vector<HttpRequest> reqs = t->requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0].timeout, absl::Milliseconds(1500));
    EXPECT_EQ(reqs[1].timeout, absl::Milliseconds(500));
    clock.Advance(absl::Seconds(1));
    absl::Status late = c.Get(kConfigMaps, "ns", "a").status();
    EXPECT_TRUE(absl::IsDeadlineExceeded(late)) << late;
    EXPECT_EQ(t->requests().size(), 2u) << "sent after the deadline";
  }
  EXPECT_FALSE(RequestDeadline::Current().has_value());
  EXPECT_TRUE(c.Get(kConfigMaps, "ns", "a").ok());
  EXPECT_EQ(t->requests().back().timeout, absl::Seconds(30));
  EXPECT_EQ(answers, 3);
}

TEST(ClientTest, ListAllFollowsContinueTokens) {
  auto* t = new FakeTransport([](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (r.path.find("continue=") == std::string::npos) {
      return Ok({{"kind", "ConfigMapList"},
                 {"metadata", {{"resourceVersion", "7"}, {"continue", "tok/1"}}},
                 {"items", Json::array({Json{{"metadata", {{"name", "a"}}}}})}});
    }
    return Ok({{"kind", "ConfigMapList"},
               {"metadata", {{"resourceVersion", "7"}}},
               {"items", Json::array({Json{{"metadata", {{"name", "b"}}}}})}});
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  ListOptions lo;
  lo.limit = 1;
  lo.label_selector = "app=web";
  absl::StatusOr<Json> all = c.ListAll(kConfigMaps, "ns", lo);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ((*all)["items"].size(), 2u);
  EXPECT_EQ(JsonString(*all, "/metadata/resourceVersion"), "7");
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dweb&limit=1");
  EXPECT_EQ(reqs[1].path,
            "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dweb&limit=1&continue=tok%2F1");
}

// A list answer streamed in `chunk`-byte pieces.
StreamResponse StreamedList(const std::string& body, size_t chunk) {
  auto s = std::make_shared<testing::FakeStreamState>();
  for (size_t i = 0; i < body.size(); i += chunk) s->Push(body.substr(i, chunk));
  s->Close();
  return testing::OkStream(s);
}

TEST(ClientTest, ListEachStreamsItemsAcrossPagesAndChunks) {
  // The API server's field order: kind, apiVersion, metadata, items.
  const std::string page1 =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c2"},)"
      R"("items":[{"metadata":{"name":"a","labels":{"x":"{\"]"}}},{"metadata":{"name":"b"}}]})";
  const std::string page2 =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},)"
      R"("items":[{"metadata":{"name":"c"},"spec":{"items":[{"a":1}]}}]})";
  for (size_t chunk : {1, 5, 4096}) {
    std::vector<std::string> paths;
    auto* t = new FakeTransport(
        [](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
          return absl::InternalError("lists are streamed, not sent");
        },
        [&](const HttpRequest& r) -> absl::StatusOr<StreamResponse> {
          paths.push_back(r.path);
          return StreamedList(paths.size() == 1 ? page1 : page2, chunk);
        });
    Client c(TestConfig(), std::unique_ptr<Transport>(t));
    std::vector<Json> items;
    ListOptions o;
    o.limit = 2;
    o.resource_version = "0";
    absl::StatusOr<Json> list =
        c.ListEach(kPods, "ns", o, [&](Json item) { items.push_back(std::move(item)); });
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_EQ(JsonString(*list, "/metadata/resourceVersion"), "7");
    EXPECT_EQ((*list)["items"], Json::array()) << "items are handed out, not kept";
    ASSERT_EQ(items.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(JsonString(items[0], "/metadata/labels/x"), "{\"]") << "chunk " << chunk;
    EXPECT_EQ(JsonString(items[2], "/metadata/name"), "c");
    EXPECT_EQ(items[2]["spec"]["items"], Json::parse(R"([{"a":1}])")) << "nested items stay";
    for (const Json& i : items) {
      EXPECT_EQ(JsonString(i, "/kind"), "Pod");
      EXPECT_EQ(JsonString(i, "/apiVersion"), "v1");
    }
    ASSERT_EQ(paths.size(), 2u);
    EXPECT_EQ(paths[0], "/api/v1/namespaces/ns/pods?limit=2&resourceVersion=0");
    EXPECT_EQ(paths[1], "/api/v1/namespaces/ns/pods?limit=2&continue=c2");
    EXPECT_EQ(Header(t->requests()[0], "Authorization"), "Bearer secret");
  }
}

TEST(ClientTest, ListEachFillsKindEvenWhenItComesAfterTheItems) {
  auto* t = new FakeTransport(nullptr, [](const HttpRequest&) -> absl::StatusOr<StreamResponse> {
    return StreamedList(R"({"items":[{"metadata":{"name":"a"}}],"kind":"ConfigMapList",)"
                        R"("apiVersion":"v1","metadata":{"resourceVersion":"3"}})",
                        3);
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  std::vector<Json> items;
  ASSERT_TRUE(c.ListEach(kConfigMaps, "", {}, [&](Json i) { items.push_back(std::move(i)); }).ok());
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(JsonString(items[0], "/kind"), "ConfigMap");
}

TEST(ClientTest, ListEachErrors) {
  int call = 0;
  auto state = std::make_shared<testing::FakeStreamState>();
  auto* t = new FakeTransport(nullptr, [&](const HttpRequest&) -> absl::StatusOr<StreamResponse> {
    switch (call++) {
      case 0:
        return StreamResponse{410, "", R"({"kind":"Status","code":410,"reason":"Expired"})",
                              nullptr};
      case 1:
        return StreamedList(R"({"kind":"PodList","items":[{"a":1},{"b")", 4);
      default:
        state->Push(R"({"kind":"PodList","items":[{"metadata":{"name":"a"}},)");
        state->Fail(absl::UnavailableError("connection reset"));
        return testing::OkStream(state);
    }
  });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  std::vector<Json> items;
  auto collect = [&](Json i) { items.push_back(std::move(i)); };
  EXPECT_TRUE(IsExpired(c.ListEach(kPods, "", {}, collect).status()));
  absl::Status truncated = c.ListEach(kPods, "", {}, collect).status();
  EXPECT_EQ(truncated.code(), absl::StatusCode::kInternal) << truncated;
  absl::Status reset = c.ListEach(kPods, "", {}, collect).status();
  EXPECT_EQ(reset.code(), absl::StatusCode::kUnavailable) << reset;
  EXPECT_NE(reset.message().find("connection reset"), std::string::npos) << reset;
  // Items finished before the failure were delivered (the caller's retry lists again).
  EXPECT_EQ(items.size(), 2u);
}

TEST(ClientTest, PatchTypesAndApply) {
  auto* t = new FakeTransport(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> { return Ok(Json::object()); });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  ASSERT_TRUE(c.Patch(kConfigMaps, "ns", "a", PatchType::kMerge, {{"data", {{"k", "v"}}}}).ok());
  ASSERT_TRUE(c.Patch(kConfigMaps, "ns", "a", PatchType::kJson,
                      Json::array({{{"op", "remove"}, {"path", "/data/k"}}}))
                  .ok());
  PatchOptions apply;
  apply.field_manager = "booster";
  apply.force = true;
  ASSERT_TRUE(c.Patch(kConfigMaps, "ns", "a", PatchType::kApply, Json::object(), apply).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      c.Patch(kConfigMaps, "ns", "a", PatchType::kApply, Json::object()).status()));
  PatchOptions status;
  status.subresource = "status";
  ASSERT_TRUE(c.Patch(kDeployments, "ns", "d", PatchType::kMerge, Json::object(), status).ok());
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(Header(reqs[0], "Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(Header(reqs[1], "Content-Type"), "application/json-patch+json");
  EXPECT_EQ(Header(reqs[2], "Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(reqs[2].path, "/api/v1/namespaces/ns/configmaps/a?fieldManager=booster&force=true");
  EXPECT_EQ(reqs[3].path, "/apis/apps/v1/namespaces/ns/deployments/d/status");
}

TEST(ClientTest, DeleteSendsPreconditionsAndPropagation) {
  auto* t = new FakeTransport(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> { return Ok(Json::object()); });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  DeleteOptions d;
  d.precondition_uid = "u-1";
  d.precondition_resource_version = "9";
  d.propagation_policy = "Foreground";
  ASSERT_TRUE(c.Delete(kDeployments, "ns", "web", d).ok());
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "DELETE");
  Json body = *ParseJson(reqs[0].body);
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "9");
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
}

TEST(ClientTest, ScaleAndStatusSubresources) {
  auto* t = new FakeTransport(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> { return Ok(Json::object()); });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  ASSERT_TRUE(c.GetScale(kDeployments, "ns", "web").ok());
  ASSERT_TRUE(c.UpdateScale(kDeployments, "ns", {{"metadata", {{"name", "web"}}}}).ok());
  ASSERT_TRUE(c.UpdateStatus(kDeployments, "ns", {{"metadata", {{"name", "web"}}}}).ok());
  auto reqs = t->requests();
  EXPECT_EQ(reqs[0].path, "/apis/apps/v1/namespaces/ns/deployments/web/scale");
  EXPECT_EQ(reqs[1].method, "PUT");
  EXPECT_EQ(reqs[1].path, "/apis/apps/v1/namespaces/ns/deployments/web/scale");
  EXPECT_EQ(reqs[2].path, "/apis/apps/v1/namespaces/ns/deployments/web/status");
}

TEST(ClientTest, TooManyRequestsIsRetriedAfterRetryAfter) {
  std::atomic<int> calls{0};
  auto* t = new FakeTransport([&](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    if (calls++ < 2) return HttpResponse{429, "", "2"};
    return Ok(Json::object());
  });
  Config cfg = TestConfig();
  FakeClock clock;
  Client c(cfg, std::unique_ptr<Transport>(t), &clock);
  std::thread advancer([&] {
    // After the i-th 429 the client parks on the clock; move time by what it asked for.
    for (int i = 1; i <= 2; ++i) {
      while (calls.load() != i || clock.Sleepers() == 0) std::this_thread::yield();
      clock.Advance(absl::Seconds(2));
    }
  });
  const absl::Time start = clock.Now();
  EXPECT_TRUE(c.Get(kConfigMaps, "ns", "a").ok());
  advancer.join();
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(clock.Now() - start, absl::Seconds(4)) << "slept exactly what Retry-After asked";
}

TEST(ClientTest, TooManyRequestsGivesUpAfterMaxRetries) {
  std::atomic<int> calls{0};
  auto* t = new FakeTransport([&](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
    calls++;
    return HttpResponse{429, "", "0"};
  });
  Config cfg = TestConfig();
  cfg.max_retries = 3;
  Client c(cfg, std::unique_ptr<Transport>(t));
  absl::Status s = c.Get(kConfigMaps, "ns", "a").status();
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_EQ(calls.load(), 4);
}

TEST(ClientTest, ClientSideRateLimit) {
  auto* t = new FakeTransport(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> { return Ok(Json::object()); });
  Config cfg = TestConfig();
  cfg.qps = 1;
  cfg.burst = 2;
  FakeClock clock;
  Client c(cfg, std::unique_ptr<Transport>(t), &clock);
  EXPECT_TRUE(c.Get(kConfigMaps, "ns", "a").ok());
  EXPECT_TRUE(c.Get(kConfigMaps, "ns", "a").ok());
  std::thread third([&] { EXPECT_TRUE(c.Get(kConfigMaps, "ns", "a").ok()); });
  while (clock.Sleepers() == 0) std::this_thread::yield();
  EXPECT_EQ(t->requests().size(), 2u) << "the third request waits for a token";
  clock.Advance(absl::Seconds(1));
  third.join();
  EXPECT_EQ(t->requests().size(), 3u);
}

TEST(ClientTest, WatchPathAndNon2xx) {
  auto* t = new FakeTransport(
      [](const HttpRequest&) -> absl::StatusOr<HttpResponse> { return Ok(Json::object()); },
      [](const HttpRequest&) -> absl::StatusOr<StreamResponse> {
        StreamResponse r;
        r.status = 410;
        r.error_body = R"({"kind":"Status","reason":"Expired","message":"too old"})";
        return r;
      });
  Client c(TestConfig(), std::unique_ptr<Transport>(t));
  WatchOptions wo;
  wo.resource_version = "5";
  wo.timeout_seconds = 300;
  auto w = c.Watch(kPods, "", wo);
  EXPECT_TRUE(IsExpired(w.status())) << w.status();
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path,
            "/api/v1/pods?watch=1&resourceVersion=5&timeoutSeconds=300&allowWatchBookmarks=true");
  EXPECT_GT(reqs[0].timeout, absl::Seconds(300)) << "read timeout outlasts the server's";
}

}  // namespace
}  // namespace booster::kube
