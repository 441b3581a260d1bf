#include "operator/notify/dispatcher.h"

#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::notify {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class FakePoster : public Poster {
 public:
  absl::StatusOr<PostAnswer> Post(const std::string& url, const std::string& body) override {
    posts.push_back({url, body});
    if (!down.ok()) return down;
    return PostAnswer{status, retry_after, ""};
  }
  std::vector<std::pair<std::string, std::string>> posts;
  absl::Status down;
  int status = 200;
  std::string retry_after;
};

class FakeSecrets : public SecretReader {
 public:
  absl::StatusOr<std::string> Read(const std::string& ns, const std::string& name,
                                   const std::string& key) override {
    auto it = values.find(ns + "/" + name + "/" + key);
    if (it == values.end()) return absl::NotFoundError("secrets \"" + name + "\" not found");
    return it->second;
  }
  std::map<std::string, std::string> values;
};

class Recorder : public DeliveryObserver {
 public:
  void Delivered(const DeliveryReport& r) override { delivered.push_back(r); }
  void Failed(const DeliveryReport& r) override { failed.push_back(r); }
  std::vector<DeliveryReport> delivered, failed;
};

Json Profile(const char* notifications) {
  Json p = Json::parse(R"({"apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
    "metadata": {"name": "web-tuning", "namespace": "shop", "uid": "u1"},
    "spec": {"targetRef": {"kind": "Deployment", "name": "web"}},
    "status": {"phase": "Promoted"}})");
  p["spec"]["notifications"] = Json::parse(notifications);
  return p;
}

const EventFacts kPromoted{"Normal", "Promoted", "the tuning is in Deployment web", "Promoted"};
const EventFacts kRolledBack{"Warning", "RolledBack", "back to 4 replicas", "RolledBack"};

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() : d_(&poster_, &secrets_, &clock_, &observer_) {
    secrets_.values["shop/hooks/address"] = "http://10.96.0.9/hook";
    secrets_.values["shop/chat/url"] = "https://hooks.example/services/T/B/X";
  }
  FakeClock clock_{absl::FromUnixSeconds(1796000000)};
  FakePoster poster_;
  FakeSecrets secrets_;
  Recorder observer_;
  Dispatcher d_;
};

TEST_F(DispatcherTest, EachChannelThatWantsTheKindGetsItsPayload) {
  Json p = Profile(R"([
    {"name": "hooks", "provider": "webhook", "secretRef": {"name": "hooks"}},
    {"name": "chat", "provider": "slack", "secretRef": {"name": "chat", "key": "url"},
     "events": ["RolledBack"]}])");
  ASSERT_TRUE(d_.Enqueue(p, kPromoted).ok());
  ASSERT_TRUE(d_.Enqueue(p, {"Normal", "NewRevision", "a new revision", "Progressing"}).ok());
  EXPECT_EQ(d_.Pending(), 1u) << "only the webhook wants Promoted; nobody NewRevision";
  EXPECT_TRUE(poster_.posts.empty()) << "Enqueue never sends";
  EXPECT_EQ(d_.RunDue(), absl::InfiniteFuture());
  ASSERT_EQ(poster_.posts.size(), 1u);
  EXPECT_EQ(poster_.posts[0].first, "http://10.96.0.9/hook");
  EXPECT_EQ(Json::parse(poster_.posts[0].second)["event"], "Promoted");
  ASSERT_EQ(observer_.delivered.size(), 1u);
  EXPECT_EQ(observer_.delivered[0].channel, "hooks");
  EXPECT_EQ(observer_.delivered[0].attempts, 1);
  ASSERT_TRUE(d_.Enqueue(p, kRolledBack).ok());
  d_.RunDue();
  ASSERT_EQ(poster_.posts.size(), 3u);
  EXPECT_EQ(poster_.posts[2].first, "https://hooks.example/services/T/B/X");
  EXPECT_THAT(Json::parse(poster_.posts[2].second)["text"].get<std::string>(),
              HasSubstr("rolled back"));
}

TEST_F(DispatcherTest, AReceiverThatIsDownGetsTheMessageOnceItIsBackInOrder) {
  Json p = Profile(R"([{"name": "hooks", "provider": "webhook", "secretRef": {"name": "hooks"}}])");
  poster_.down = absl::UnavailableError("connection refused");
  ASSERT_TRUE(d_.Enqueue(p, kRolledBack).ok());
  ASSERT_TRUE(d_.Enqueue(p, kPromoted).ok());
  // The schedule: 2, 4, 8, 16 s after each failed attempt. The second message waits behind
  // the first (one channel's deliveries go out in order).
  absl::Time next = d_.RunDue();
  EXPECT_EQ(poster_.posts.size(), 1u);
  std::vector<absl::Duration> gaps;
  for (int i = 0; i < 4; ++i) {
    gaps.push_back(next - clock_.Now());
    clock_.Advance(next - clock_.Now());
    next = d_.RunDue();
  }
  EXPECT_EQ(gaps, (std::vector<absl::Duration>{absl::Seconds(2), absl::Seconds(4), absl::Seconds(8),
                                               absl::Seconds(16)}));
  EXPECT_EQ(poster_.posts.size(), 5u) << "only the head was tried";
  ASSERT_EQ(observer_.failed.size(), 5u);
  EXPECT_FALSE(observer_.failed.back().final);
  EXPECT_EQ(observer_.failed.back().retry_in, absl::Seconds(32));
  EXPECT_THAT(std::string(observer_.failed[0].error.message()), Not(HasSubstr("10.96.0.9/hook")))
      << "the URL is never repeated";
  poster_.down = absl::OkStatus();
  clock_.Advance(next - clock_.Now());
  EXPECT_EQ(d_.RunDue(), absl::InfiniteFuture());
  ASSERT_EQ(poster_.posts.size(), 7u);
  EXPECT_EQ(Json::parse(poster_.posts[5].second)["event"], "RolledBack");
  EXPECT_EQ(Json::parse(poster_.posts[6].second)["event"], "Promoted");
  ASSERT_EQ(observer_.delivered.size(), 2u);
  EXPECT_EQ(observer_.delivered[0].attempts, 6);
  EXPECT_EQ(d_.Pending(), 0u);
}

TEST_F(DispatcherTest, RefusedIsFinalRetryAfterIsHonouredAndOldDeliveriesAreGivenUp) {
  Json p = Profile(R"([{"name": "hooks", "provider": "webhook", "secretRef": {"name": "hooks"}}])");
  poster_.status = 404;
  ASSERT_TRUE(d_.Enqueue(p, kPromoted).ok());
  d_.RunDue();
  ASSERT_EQ(observer_.failed.size(), 1u);
  EXPECT_TRUE(observer_.failed[0].final);
  EXPECT_THAT(std::string(observer_.failed[0].error.message()), HasSubstr("HTTP 404"));
  EXPECT_EQ(d_.Pending(), 0u);

  poster_.status = 429;
  poster_.retry_after = "45";
  ASSERT_TRUE(d_.Enqueue(p, kPromoted).ok());
  EXPECT_EQ(d_.RunDue() - clock_.Now(), absl::Seconds(45));
  poster_.retry_after = "";
  poster_.status = 503;
  int attempts = 1;
  while (d_.Pending() > 0) {
    clock_.Advance(d_.RunDue() - clock_.Now());
    d_.RunDue();
    ++attempts;
    ASSERT_LT(attempts, 200);
  }
  ASSERT_TRUE(observer_.failed.back().final);
  EXPECT_THAT(std::string(observer_.failed.back().error.message()), HasSubstr("given up after"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(observer_.failed.back().error));
  EXPECT_GE(attempts, 60) << "about an hour of attempts a minute apart";
}

TEST_F(DispatcherTest, AMissingSecretIsRetriedAndUsedOnceItExists) {
  Json p = Profile(R"([{"name": "late", "provider": "teams", "secretRef": {"name": "late"}}])");
  ASSERT_TRUE(d_.Enqueue(p, kRolledBack).ok());
  d_.RunDue();
  ASSERT_EQ(observer_.failed.size(), 1u);
  EXPECT_THAT(std::string(observer_.failed[0].error.message()), HasSubstr("not found"));
  EXPECT_TRUE(poster_.posts.empty());
  secrets_.values["shop/late/address"] = "https://teams.example/workflows/1";
  clock_.Advance(absl::Seconds(2));
  d_.RunDue();
  ASSERT_EQ(poster_.posts.size(), 1u);
  EXPECT_EQ(Json::parse(poster_.posts[0].second)["type"], "message");
}

TEST_F(DispatcherTest, AFullQueueGivesUpTheOldestAndSaysSo) {
  Json p = Profile(R"([{"name": "hooks", "provider": "webhook", "secretRef": {"name": "hooks"}}])");
  for (size_t i = 0; i < Dispatcher::kMaxQueued + 2; ++i)
    ASSERT_TRUE(d_.Enqueue(p, kPromoted).ok());
  EXPECT_EQ(d_.Pending(), Dispatcher::kMaxQueued);
  ASSERT_EQ(observer_.failed.size(), 2u);
  EXPECT_TRUE(observer_.failed[0].final);
  EXPECT_TRUE(absl::IsResourceExhausted(observer_.failed[0].error));
  EXPECT_TRUE(poster_.posts.empty());
}

TEST_F(DispatcherTest, ABrokenSpecIsReportedAndNothingQueued) {
  Json p = Profile(R"([{"provider": "pigeon", "secretRef": {"name": "hooks"}}])");
  absl::Status s = d_.Enqueue(p, kPromoted);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(d_.Pending(), 0u);
  Json none = Profile("null");
  none["spec"].erase("notifications");
  EXPECT_TRUE(d_.Enqueue(none, kPromoted).ok());
  EXPECT_EQ(d_.Pending(), 0u);
}

TEST(DispatcherThreadTest, TheThreadDeliversWhatIsEnqueued) {
  FakePoster poster;
  FakeSecrets secrets;
  secrets.values["shop/hooks/address"] = "http://x/hook";
  Recorder observer;
  Dispatcher d(&poster, &secrets, &RealClock::Get(), &observer);
  d.Start();
  ASSERT_TRUE(
      d.Enqueue(Profile(R"([{"provider": "webhook", "secretRef": {"name": "hooks"}}])"), kPromoted)
          .ok());
  for (int i = 0; i < 500 && d.Pending() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  d.Stop();
  EXPECT_EQ(d.Pending(), 0u);
  EXPECT_EQ(poster.posts.size(), 1u);
}

}  // namespace
}  // namespace booster::notify
