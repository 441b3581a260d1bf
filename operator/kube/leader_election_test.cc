#include "operator/kube/leader_election.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"
#include "operator/kube/helpers.h"

namespace booster::kube {
namespace {

using testing::FakeTransport;

TEST(DecideLeaseTest, Table) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  LeaseRecord held{"a", 15, t0, t0, 0};
  EXPECT_EQ(DecideLease(held, "a", t0, t0 + absl::Hours(1)), LeaseAction::kRenew);
  EXPECT_EQ(DecideLease(held, "b", t0, t0 + absl::Seconds(14)), LeaseAction::kWait);
  EXPECT_EQ(DecideLease(held, "b", t0, t0 + absl::Seconds(15)), LeaseAction::kTakeOver);
  // Expiry is judged on when *we* observed the record, not on its renewTime (clock skew).
  EXPECT_EQ(DecideLease(held, "b", t0 + absl::Seconds(10), t0 + absl::Seconds(20)),
            LeaseAction::kWait);
  LeaseRecord released{"", 1, t0, t0, 3};
  EXPECT_EQ(DecideLease(released, "b", t0, t0), LeaseAction::kTakeOver);
}

TEST(NextLeaseRecordTest, RenewKeepsAcquireTimeTakeOverCountsATransition) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  LeaseRecord cur{"a", 15, t0, t0, 2};
  LeaseRecord renew = NextLeaseRecord(cur, LeaseAction::kRenew, "a", absl::Seconds(15),
                                      t0 + absl::Seconds(2));
  EXPECT_EQ(renew.acquire_time, t0);
  EXPECT_EQ(renew.renew_time, t0 + absl::Seconds(2));
  EXPECT_EQ(renew.transitions, 2);
  LeaseRecord take = NextLeaseRecord(cur, LeaseAction::kTakeOver, "b", absl::Seconds(15),
                                     t0 + absl::Seconds(20));
  EXPECT_EQ(take.holder, "b");
  EXPECT_EQ(take.acquire_time, t0 + absl::Seconds(20));
  EXPECT_EQ(take.transitions, 3);
}

TEST(LeaseRecordTest, JsonRoundTrip) {
  LeaseRecord r{"me", 15, absl::FromUnixMicros(1'700'000'000'123'456),
                absl::FromUnixMicros(1'700'000'002'000'000), 4};
  Json lease = {{"metadata", {{"name", "l"}}}};
  LeaseRecordToJson(r, &lease);
  EXPECT_EQ(lease["metadata"]["name"], "l");
  EXPECT_EQ(LeaseRecordFromJson(lease), r);
}

// An in-memory Lease endpoint with optimistic concurrency, like the API server's.
class FakeLeaseApi {
 public:
  std::unique_ptr<Transport> NewTransport() {
    return std::make_unique<FakeTransport>(
        [this](const HttpRequest& r) -> absl::StatusOr<HttpResponse> { return Handle(r); });
  }
  void SetDown(bool down) {
    std::lock_guard<std::mutex> l(mu_);
    down_ = down;
  }
  Json lease() {
    std::lock_guard<std::mutex> l(mu_);
    return lease_;
  }

 private:
  absl::StatusOr<HttpResponse> Handle(const HttpRequest& r) {
    std::lock_guard<std::mutex> l(mu_);
    if (down_) return absl::UnavailableError("connection refused");
    if (r.method == "GET") {
      if (lease_.is_null()) return HttpResponse{404, R"({"kind":"Status","reason":"NotFound"})", ""};
      return HttpResponse{200, lease_.dump(), ""};
    }
    Json body = *ParseJson(r.body);
    if (r.method == "POST") {
      if (!lease_.is_null()) {
        return HttpResponse{409, R"({"kind":"Status","reason":"AlreadyExists"})", ""};
      }
    } else if (r.method == "PUT") {
      if (JsonString(body, "/metadata/resourceVersion") != std::to_string(rv_)) {
        return HttpResponse{409, R"({"kind":"Status","reason":"Conflict"})", ""};
      }
    }
    body["metadata"]["resourceVersion"] = std::to_string(++rv_);
    lease_ = body;
    return HttpResponse{200, lease_.dump(), ""};
  }

  std::mutex mu_;
  Json lease_;
  int rv_ = 0;
  bool down_ = false;
};

Config TestConfig() {
  Config c;
  c.server = "https://fake";
  c.qps = 0;
  return c;
}

LeaderElectionConfig Election(const std::string& id) {
  LeaderElectionConfig e;
  e.ns = "ns";
  e.name = "op";
  e.identity = id;
  return e;
}

TEST(LeaderElectorTest, FirstCreatesOthersWaitThenTakeOverAfterExpiry) {
  FakeLeaseApi api;
  FakeClock clock;
  Client ca(TestConfig(), api.NewTransport(), &clock);
  Client cb(TestConfig(), api.NewTransport(), &clock);
  LeaderElector a(&ca, Election("a"), &clock);
  LeaderElector b(&cb, Election("b"), &clock);
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(LeaseRecordFromJson(api.lease()).holder, "a");
  clock.Advance(absl::Seconds(2));
  EXPECT_TRUE(a.TryAcquireOrRenew()) << "renew";
  EXPECT_FALSE(b.TryAcquireOrRenew()) << "b saw a new record now: its 15 s start over";
  // a dies. b must wait a full lease duration from when it last saw the record change.
  clock.Advance(absl::Seconds(14));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(b.TryAcquireOrRenew());
  LeaseRecord r = LeaseRecordFromJson(api.lease());
  EXPECT_EQ(r.holder, "b");
  EXPECT_EQ(r.transitions, 1);
  EXPECT_EQ(r.lease_duration_seconds, 15);
  EXPECT_FALSE(a.TryAcquireOrRenew()) << "a, back from the dead, is not leader";
}

TEST(LeaderElectorTest, ReleaseLetsTheNextCandidateInAtOnce) {
  FakeLeaseApi api;
  FakeClock clock;
  Client ca(TestConfig(), api.NewTransport(), &clock);
  Client cb(TestConfig(), api.NewTransport(), &clock);
  LeaderElector a(&ca, Election("a"), &clock);
  LeaderElector b(&cb, Election("b"), &clock);
  ASSERT_TRUE(a.TryAcquireOrRenew());
  ASSERT_FALSE(b.TryAcquireOrRenew());
  ASSERT_TRUE(a.Release().ok());
  EXPECT_EQ(LeaseRecordFromJson(api.lease()).holder, "");
  EXPECT_TRUE(b.TryAcquireOrRenew());
  EXPECT_TRUE(b.Release().ok());
  EXPECT_TRUE(a.Release().ok()) << "releasing a lease we do not hold is a no-op";
}

TEST(LeaderElectorTest, RunStepsDownWhenRenewalFailsForTheRenewDeadline) {
  FakeLeaseApi api;
  FakeClock clock;
  Client ca(TestConfig(), api.NewTransport(), &clock);
  LeaderElector a(&ca, Election("a"), &clock);
  std::atomic<int> started{0}, stopped{0};
  std::thread run([&] { a.Run([&] { started++; }, [&] { stopped++; }); });
  while (started.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(a.IsLeader());
  api.SetDown(true);
  // Time moves in 1 s steps; after the 10 s renew deadline the elector must give up.
  for (int i = 0; i < 40 && stopped.load() == 0; ++i) {
    clock.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  run.join();
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_FALSE(a.IsLeader());
}

// Cut off from the API server with requests that hang until their timeout (30 s here,
// the client's default), the leader still gives up before its Lease could expire for the
// other replicas: every renewal request is bounded by the renew deadline.
TEST(LeaderElectorTest, ALeaderCutOffGivesUpBeforeItsLeaseCanExpire) {
  FakeLeaseApi api;
  FakeClock clock;
  std::unique_ptr<Transport> server = api.NewTransport();
  std::atomic<bool> cut{false};
  auto* t = new FakeTransport([&](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
    if (!cut.load()) return server->Send(r);
    clock.Advance(r.timeout);  // no answer: the transport waits out its timeout
    return absl::DeadlineExceededError("no answer within the timeout");
  });
  Config config = TestConfig();
  config.request_timeout = absl::Seconds(30);
  Client ca(config, std::unique_ptr<Transport>(t), &clock);
  LeaderElector a(&ca, Election("a"), &clock);
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  absl::Time stopped_at;
  std::thread run([&] {
    a.Run([&] { started++; },
          [&] {
            stopped_at = clock.Now();
            stopped++;
          });
  });
  while (started.load() == 0) std::this_thread::yield();
  const size_t campaign_requests = t->requests().size();
  cut.store(true);
  for (int i = 0; i < 60 && stopped.load() == 0; ++i) {
    clock.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  run.join();
  ASSERT_EQ(stopped.load(), 1);
  const LeaseRecord last = LeaseRecordFromJson(api.lease());
  EXPECT_EQ(last.holder, "a");
  EXPECT_LT(stopped_at, last.renew_time + absl::Seconds(last.lease_duration_seconds))
      << "the leader stopped " << (stopped_at - last.renew_time)
      << " after its last renewal; another replica may take over after "
      << last.lease_duration_seconds << " s";
  const std::vector<HttpRequest> requests = t->requests();
  ASSERT_GT(requests.size(), campaign_requests);
  for (size_t i = campaign_requests; i < requests.size(); ++i) {
    EXPECT_LE(requests[i].timeout, absl::Seconds(10)) << "request " << i << " while leading";
  }
}

TEST(LeaderElectorTest, StopReleasesTheLease) {
  FakeLeaseApi api;
  FakeClock clock;
  Client ca(TestConfig(), api.NewTransport(), &clock);
  LeaderElector a(&ca, Election("a"), &clock);
  std::atomic<int> started{0}, stopped{0};
  std::thread run([&] { a.Run([&] { started++; }, [&] { stopped++; }); });
  while (started.load() == 0) std::this_thread::yield();
  a.Stop();
  run.join();
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_EQ(LeaseRecordFromJson(api.lease()).holder, "");
}

}  // namespace
}  // namespace booster::kube
