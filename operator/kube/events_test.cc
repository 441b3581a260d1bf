#include "operator/kube/events.h"

#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::kube {
namespace {

using testing::FakeTransport;

TEST(EventCorrelatorTest, DuplicatesArePatchedAndStormsDropped) {
  FakeClock clock;
  EventCorrelator c(&clock);
  EventDecision d = c.Observe("obj", "obj/Warning/Failed/x");
  EXPECT_EQ(d.kind, EventDecision::kCreate);
  c.Recorded("obj/Warning/Failed/x", "p.1", 1, clock.Now());
  d = c.Observe("obj", "obj/Warning/Failed/x");
  EXPECT_EQ(d.kind, EventDecision::kPatch);
  EXPECT_EQ(d.existing_name, "p.1");
  EXPECT_EQ(d.count, 2);
  // 25 tokens per object: 2 used, 23 more pass, then drops.
  for (int i = 0; i < 23; ++i) {
    EXPECT_NE(c.Observe("obj", "obj/" + std::to_string(i)).kind, EventDecision::kDrop) << i;
  }
  EXPECT_EQ(c.Observe("obj", "obj/more").kind, EventDecision::kDrop);
  EXPECT_NE(c.Observe("other", "other/x").kind, EventDecision::kDrop) << "per object";
  clock.Advance(absl::Minutes(5));
  EXPECT_NE(c.Observe("obj", "obj/later").kind, EventDecision::kDrop) << "one token per 5 min";
  EXPECT_EQ(c.Observe("obj", "obj/later2").kind, EventDecision::kDrop);
}

TEST(EventRecorderTest, CreatesThenBumpsCount) {
  auto* t = new FakeTransport([](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    return HttpResponse{r.method == "POST" ? 201 : 200, r.body, ""};
  });
  Config cfg;
  cfg.server = "https://fake";
  cfg.qps = 0;
  FakeClock clock;
  Client client(cfg, std::unique_ptr<Transport>(t), &clock);
  EventRecorder rec(&client, "booster-operator", &clock);
  Json obj = {{"apiVersion", "booster.dev/v1alpha1"},
              {"kind", "BoosterProfile"},
              {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}}}};
  ASSERT_TRUE(rec.Event(obj, "Warning", "RolledBack", "p99 +18%").ok());
  clock.Advance(absl::Seconds(3));
  ASSERT_TRUE(rec.Event(obj, "Warning", "RolledBack", "p99 +18%").ok());
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ns/events");
  Json ev = *ParseJson(reqs[0].body);
  EXPECT_EQ(ev["involvedObject"]["uid"], "u1");
  EXPECT_EQ(ev["involvedObject"]["kind"], "BoosterProfile");
  EXPECT_EQ(ev["reason"], "RolledBack");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["source"]["component"], "booster-operator");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ns/events/" + ev["metadata"]["name"].get<std::string>());
  EXPECT_EQ((*ParseJson(reqs[1].body))["count"], 2);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(rec.Event(obj, "Normal", "Step", std::to_string(i)).ok());
  EXPECT_GT(rec.Dropped(), 0);
  EXPECT_EQ(t->requests().size(), 25u) << "burst of 25 per object, then dropped";
}

}  // namespace
}  // namespace booster::kube
