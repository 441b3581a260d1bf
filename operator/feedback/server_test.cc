// End-to-end tests of the feedback server: a real gRPC client over TLS (certificates made
// with the openssl command in a temp dir at test time), the real server, a fake
// TokenReview and fake pods.
#include "operator/feedback/server.h"
#include "operator/feedback/test_pki.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "booster/v1/agent.grpc.pb.h"
#include "booster/v1/agent.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "operator/feedback/prometheus_observer.h"
#include "prometheus/registry.h"

namespace booster::feedback {
namespace {

namespace v1 = ::booster::v1;
namespace fs = std::filesystem;

constexpr char kServiceName[] = "booster-operator.booster-system.svc";
constexpr char kProfile[] = "shop/web-boost";
const StepId kStep{
    .generation = 2, .step = 1, .started = absl::FromUnixSeconds(1'700'000'000)};


// Throwaway PKI (operator/feedback/test_pki.h): a CA, a server certificate it signed for
// kServiceName and 127.0.0.1, and an unrelated CA.
using Pki = ::booster::feedback::TestPki;

Pki MakePki() {
  absl::StatusOr<Pki> pki = ::booster::feedback::MakeTestPki(kServiceName, "feedback-test");
  if (!pki.ok()) {
    ADD_FAILURE() << pki.status();
    return {};
  }
  return *pki;
}

// TokenReview answers by token; counts calls.
class FakeReviewer final : public TokenReviewer {
 public:
  absl::StatusOr<TokenReviewResult> Review(absl::string_view token) override {
    std::lock_guard<std::mutex> l(mu_);
    ++calls_;
    auto it = answers_.find(std::string(token));
    if (it == answers_.end()) {
      TokenReviewResult r;
      r.error = "invalid bearer token";
      return r;
    }
    return it->second;
  }
  void Set(const std::string& token, absl::StatusOr<TokenReviewResult> r) {
    std::lock_guard<std::mutex> l(mu_);
    answers_.insert_or_assign(token, std::move(r));
  }
  int calls() {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, absl::StatusOr<TokenReviewResult>> answers_;
  int calls_ = 0;
};

class FakePods final : public PodLookup {
 public:
  std::optional<PodInfo> Find(absl::string_view ns, absl::string_view name) const override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pods_.find(absl::StrCat(ns, "/", name));
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  void Put(PodInfo p) {
    std::lock_guard<std::mutex> l(mu_);
    pods_[absl::StrCat(p.pod_namespace, "/", p.name)] = std::move(p);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, PodInfo> pods_;
};

TokenReviewResult ReviewFor(const std::string& pod, const std::string& uid) {
  TokenReviewResult r;
  r.authenticated = true;
  r.username = "system:serviceaccount:shop:web";
  r.extra[kExtraPodName] = {pod};
  r.extra[kExtraPodUid] = {uid};
  r.audiences = {kAudience};
  return r;
}

PodInfo EnrolledPod(const std::string& name, const std::string& arm) {
  PodInfo p;
  p.pod_namespace = "shop";
  p.name = name;
  p.uid = name + "-uid";
  p.phase = "Running";
  p.labels = {{kArmLabel, arm}};
  p.annotations = {{kProfileAnnotation, kProfile}, {kTemplateHashAnnotation, "h-" + arm}};
  p.owners = {{"ReplicaSet", "web-rs", "rs-uid", true}};
  p.created = absl::FromUnixSeconds(1'699'999'000);
  p.node = "node-of-" + name;
  return p;
}

double Metric(prometheus::Registry& registry, const std::string& family, const std::string& label,
              const std::string& value) {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const auto& l : m.label) {
        if (l.name == label && l.value == value) {
          return f.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
        }
      }
    }
  }
  return -1;
}

// One agent's stream, as the agent would drive it.
class Agent {
 public:
  Agent(v1::AgentFeedback::Stub* stub, const std::string& token) {
    if (!token.empty()) ctx_.AddMetadata("authorization", token);
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    stream_ = stub->Connect(&ctx_);
  }

  bool Hello(const std::string& incarnation = "inc-1") {
    v1::AgentMessage m;
    v1::Hello* h = m.mutable_hello();
    h->set_pod_namespace("shop");
    h->set_pod_name("claimed-name");
    h->set_agent_version("0.1.0-test");
    h->set_incarnation(incarnation);
    h->mutable_topology()->set_cores(4);
    h->mutable_topology()->set_cpuset("0-3");
    return stream_->Write(m);
  }

  bool Report(uint64_t seq, const std::string& hash, const std::string& incarnation = "inc-1") {
    v1::AgentMessage m;
    v1::WindowReport* r = m.mutable_report();
    r->set_incarnation(incarnation);
    r->set_sequence(seq);
    const int64_t start = absl::ToUnixNanos(absl::FromUnixSeconds(1'700'000'000)) +
                          static_cast<int64_t>(seq) * 30'000'000'000;
    r->set_start_unix_nanos(start);
    r->set_end_unix_nanos(start + 30'000'000'000);
    r->set_template_hash(hash);
    r->set_profile_generation(2);
    v1::Metric* p99 = r->add_metrics();
    p99->set_name("latencyP99");
    p99->set_value(0.001 * static_cast<double>(seq));
    p99->set_samples(1000);
    v1::Metric* future = r->add_metrics();
    future->set_name("someFutureMetric");  // ignored by this operator
    future->set_value(1);
    return stream_->Write(m);
  }

  bool Send(const v1::AgentMessage& m) { return stream_->Write(m); }

  // The next message; nullopt when the stream ended.
  std::optional<v1::OperatorMessage> Read() {
    v1::OperatorMessage m;
    if (!stream_->Read(&m)) return std::nullopt;
    return m;
  }

  // Reads until an Ack; false if the stream ends first. Other messages are kept.
  std::optional<v1::Ack> ReadAck() {
    while (std::optional<v1::OperatorMessage> m = Read()) {
      if (m->has_ack()) return m->ack();
      others.push_back(*m);
    }
    return std::nullopt;
  }

  grpc::Status Close() {
    stream_->WritesDone();
    v1::OperatorMessage m;
    while (stream_->Read(&m)) {
    }
    return stream_->Finish();
  }

  // After the server ended the stream.
  grpc::Status Status() {
    v1::OperatorMessage m;
    while (stream_->Read(&m)) {
    }
    return stream_->Finish();
  }

  std::vector<v1::OperatorMessage> others;

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::OperatorMessage>> stream_;
};

class FeedbackServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new Pki(MakePki()); }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(pki_->dir, ec);
    delete pki_;
    pki_ = nullptr;
  }

  void SetUp() override {
    ASSERT_FALSE(pki_->ca_pem.empty()) << "no test PKI";
    pods_.Put(EnrolledPod("web-c1", "canary"));
    pods_.Put(EnrolledPod("web-b1", "baseline"));
    PodInfo unenrolled = EnrolledPod("web-plain", "canary");
    unenrolled.labels.clear();
    pods_.Put(unenrolled);
    reviewer_.Set("tok-c1", ReviewFor("web-c1", "web-c1-uid"));
    reviewer_.Set("tok-b1", ReviewFor("web-b1", "web-b1-uid"));
    reviewer_.Set("tok-plain", ReviewFor("web-plain", "web-plain-uid"));
    reviewer_.Set("tok-old-uid", ReviewFor("web-c1", "uid-of-a-deleted-pod"));
    reviewer_.Set("tok-api-down", absl::UnavailableError("connection refused"));
    store_.BeginStep(kProfile, kStep, {"h-baseline", "h-canary"});
    StartServer();
  }

  void StartServer(size_t max_pending_writes = 256) {
    server_.reset();
    FeedbackServerOptions options;
    options.max_pending_writes = max_pending_writes;
    options.address = "127.0.0.1:0";
    options.cert_file = pki_->server_cert.string();
    options.key_file = pki_->server_key.string();
    FeedbackServerDeps deps;
    deps.reviewer = &reviewer_;
    deps.pods = &pods_;
    deps.store = &store_;
    deps.observer = &observer_;
    absl::StatusOr<std::unique_ptr<FeedbackServer>> s = FeedbackServer::Start(options, deps);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_GT(server_->port(), 0);
    stub_ = v1::AgentFeedback::NewStub(Channel(pki_->ca_pem));
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& root_pem) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = root_pem;
    grpc::ChannelArguments args;
    // The certificate names the Service, as in the cluster; the test dials 127.0.0.1.
    args.SetSslTargetNameOverride(kServiceName);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                     grpc::SslCredentials(ssl), args);
  }

  double Streams(const std::string& arm) {
    return Metric(registry_, "booster_operator_agent_streams", "arm", arm);
  }
  double Windows(const std::string& arm) {
    return Metric(registry_, "booster_operator_agent_windows_total", "arm", arm);
  }
  double Rejected(const std::string& reason) {
    return Metric(registry_, "booster_operator_agent_rejected_total", "reason", reason);
  }

  static Pki* pki_;
  FakeReviewer reviewer_;
  FakePods pods_;
  WindowStore store_;
  prometheus::Registry registry_;
  PrometheusFeedbackObserver observer_{registry_};
  std::unique_ptr<FeedbackServer> server_;
  std::unique_ptr<v1::AgentFeedback::Stub> stub_;
};

Pki* FeedbackServerTest::pki_ = nullptr;

TEST_F(FeedbackServerTest, AcceptedAgentStreamsReportsIntoTheStore) {
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Hello());
  ASSERT_TRUE(agent.Report(1, "h-canary"));
  std::optional<v1::Ack> ack = agent.ReadAck();
  ASSERT_TRUE(ack) << agent.Status().error_message();
  EXPECT_EQ(ack->incarnation(), "inc-1");
  EXPECT_EQ(ack->sequence(), 1u);
  ASSERT_TRUE(agent.Report(2, "h-canary"));
  ack = agent.ReadAck();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->sequence(), 2u);
  EXPECT_TRUE(agent.others.empty());

  // The windows are filed under the pod's identity, from the pod, not from Hello.
  absl::StatusOr<StepWindows> q = store_.Query(kProfile, kStep);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->arm(Arm::kCanary).windows, 2u);
  EXPECT_EQ(q->arm(Arm::kBaseline).windows, 0u);
  const std::vector<MetricPoint>& p99 = q->arm(Arm::kCanary).metrics.at("latencyP99");
  ASSERT_EQ(p99.size(), 2u);
  EXPECT_EQ(p99[0].pod, "web-c1");
  EXPECT_EQ(p99[0].pod_uid, "web-c1-uid");
  EXPECT_DOUBLE_EQ(p99[1].value, 0.002);
  EXPECT_EQ(p99[1].samples, 1000);
  EXPECT_EQ(p99[0].pod_created, absl::FromUnixSeconds(1'699'999'000));
  EXPECT_EQ(p99[0].node, "node-of-web-c1");
  EXPECT_EQ(p99[0].end - p99[0].start, absl::Seconds(30));

  std::vector<ConnectedAgent> connected = server_->Connected();
  ASSERT_EQ(connected.size(), 1u);
  EXPECT_EQ(connected[0].identity.PodKey(), "shop/web-c1");
  EXPECT_EQ(connected[0].identity.arm, Arm::kCanary);
  EXPECT_EQ(connected[0].identity.profile, kProfile);
  ASSERT_TRUE(connected[0].hello);
  EXPECT_EQ(connected[0].hello->claimed_pod, "claimed-name");
  EXPECT_EQ(connected[0].hello->agent_version, "0.1.0-test");
  EXPECT_EQ(connected[0].hello->topology.cpuset, "0-3");
  EXPECT_EQ(connected[0].windows_accepted, 2u);

  EXPECT_EQ(Streams("canary"), 1);
  EXPECT_EQ(Streams("baseline"), 0);
  EXPECT_EQ(Windows("canary"), 2);

  grpc::Status end = agent.Close();
  EXPECT_TRUE(end.ok()) << end.error_message();
  EXPECT_EQ(Streams("canary"), 0) << "closed before the agent saw the end";
  EXPECT_TRUE(server_->Connected().empty());
}

TEST_F(FeedbackServerTest, ReplayAfterReconnectCountsOnce) {
  {
    Agent first(stub_.get(), "Bearer tok-b1");
    ASSERT_TRUE(first.Hello());
    ASSERT_TRUE(first.Report(1, "h-baseline"));
    ASSERT_TRUE(first.ReadAck());
    ASSERT_TRUE(first.Report(2, "h-baseline"));
    ASSERT_TRUE(first.ReadAck());
    EXPECT_TRUE(first.Close().ok());
  }
  // The agent did not get to drop 1 and 2 from its buffer (say the Acks were lost): it
  // sends them again, then 3.
  Agent second(stub_.get(), "Bearer tok-b1");
  ASSERT_TRUE(second.Hello());
  for (uint64_t seq : {1, 2, 3}) {
    ASSERT_TRUE(second.Report(seq, "h-baseline"));
    std::optional<v1::Ack> ack = second.ReadAck();
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->sequence(), seq) << "duplicates are acknowledged too";
  }
  EXPECT_TRUE(second.others.empty()) << "no Reject for a duplicate";
  EXPECT_EQ(store_.WindowCount(kProfile, kStep, Arm::kBaseline), 3u);
  EXPECT_EQ(Windows("baseline"), 3);
  EXPECT_EQ(
      Metric(registry_, "booster_operator_agent_windows_dropped_total", "reason", "duplicate"), 2);
  EXPECT_TRUE(second.Close().ok());
}

TEST_F(FeedbackServerTest, RefusedReportsGetARejectAndAnAck) {
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Hello());
  ASSERT_TRUE(agent.Report(1, "h-old-template"));
  std::optional<v1::Ack> ack = agent.ReadAck();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->sequence(), 1u) << "processed: the agent must not resend it";
  ASSERT_EQ(agent.others.size(), 1u);
  ASSERT_TRUE(agent.others[0].has_reject());
  EXPECT_EQ(agent.others[0].reject().reason(), "stale_template");
  EXPECT_EQ(agent.others[0].reject().sequence(), 1u);
  EXPECT_EQ(agent.others[0].reject().incarnation(), "inc-1");

  v1::AgentMessage bad;
  v1::WindowReport* r = bad.mutable_report();
  r->set_incarnation("inc-1");
  r->set_sequence(2);
  r->set_start_unix_nanos(2'000'000'000);
  r->set_end_unix_nanos(1'000'000'000);  // ends before it starts
  ASSERT_TRUE(agent.Send(bad));
  ack = agent.ReadAck();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->sequence(), 2u);
  ASSERT_EQ(agent.others.size(), 2u);
  EXPECT_EQ(agent.others[1].reject().reason(), "invalid_report");
  EXPECT_FALSE(agent.others[1].reject().message().empty());

  // No step open (a leader that took over has not reconciled the profile yet): the
  // window is held, acknowledged without a Reject, and filed when the step opens.
  store_.Forget(kProfile);
  ASSERT_TRUE(agent.Report(3, "h-canary"));
  ack = agent.ReadAck();
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->sequence(), 3u);
  EXPECT_EQ(agent.others.size(), 2u) << "no Reject for a held window";
  EXPECT_EQ(Windows("canary"), 0);
  store_.BeginStep(kProfile, kStep, {"h-baseline", "h-canary"});
  EXPECT_EQ(store_.WindowCount(kProfile, kStep, Arm::kCanary), 1u);
  EXPECT_TRUE(agent.Close().ok());
}

TEST_F(FeedbackServerTest, ReportBeforeHelloEndsTheStream) {
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Report(1, "h-canary"));
  EXPECT_FALSE(agent.ReadAck());
  grpc::Status s = agent.Status();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "hello_required")) << s.error_message();
  EXPECT_EQ(store_.WindowCount(kProfile, kStep, Arm::kCanary), 0u);
  EXPECT_EQ(Streams("canary"), 0);
}

TEST_F(FeedbackServerTest, RefusedStreamsEndWithTheReason) {
  struct Case {
    std::string metadata;
    grpc::StatusCode code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"", grpc::StatusCode::UNAUTHENTICATED, "missing_token"},
      {"Basic dXNlcjpwYXNz", grpc::StatusCode::UNAUTHENTICATED, "missing_token"},
      {"Bearer ", grpc::StatusCode::UNAUTHENTICATED, "missing_token"},
      {"Bearer forged-token", grpc::StatusCode::UNAUTHENTICATED, "unauthenticated"},
      {"Bearer tok-api-down", grpc::StatusCode::UNAVAILABLE, "tokenreview_unavailable"},
      {"Bearer tok-plain", grpc::StatusCode::PERMISSION_DENIED, "not_enrolled"},
      {"Bearer tok-old-uid", grpc::StatusCode::PERMISSION_DENIED, "pod_uid_mismatch"},
  };
  std::map<std::string, double> want;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.metadata);
    Agent agent(stub_.get(), c.metadata);
    agent.Hello();  // may fail: the server can end the stream before reading
    agent.Report(1, "h-canary");
    EXPECT_FALSE(agent.ReadAck());
    grpc::Status s = agent.Status();
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_TRUE(absl::StartsWith(s.error_message(), c.reason + ": ")) << s.error_message();
    ++want[c.reason];
  }
  for (const auto& [reason, n] : want) EXPECT_EQ(Rejected(reason), n) << reason;
  EXPECT_EQ(Rejected("pod_not_found"), 0);
  EXPECT_EQ(store_.WindowCount(kProfile, kStep, Arm::kCanary), 0u);
  EXPECT_EQ(Streams("canary"), 0);
  EXPECT_TRUE(server_->Connected().empty());
}

TEST_F(FeedbackServerTest, DirectiveReachesTheConnectedAgentAndAppliedIsKept) {
  EXPECT_TRUE(absl::IsNotFound(server_->SendDirective("shop", "web-c1", {})));
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Hello());
  ASSERT_TRUE(agent.Report(1, "h-canary"));
  ASSERT_TRUE(agent.ReadAck());  // registered by now

  DirectiveSpec d;
  d.generation = 7;
  d.action = DirectiveAction::kApply;
  d.settings = {{"sysctl.net.core.somaxconn", "4096"}, {"runtime.tcp_nodelay", "true"}};
  ASSERT_TRUE(server_->SendDirective("shop", "web-c1", d).ok());
  std::optional<v1::OperatorMessage> m = agent.Read();
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->has_directive());
  const v1::Directive& got = m->directive();
  EXPECT_EQ(got.generation(), 7);
  EXPECT_EQ(got.action(), v1::DIRECTIVE_ACTION_APPLY);
  EXPECT_EQ(got.arm(), "canary") << "from the pod's label";
  EXPECT_EQ(got.profile(), kProfile);
  ASSERT_EQ(got.settings_size(), 2);
  EXPECT_EQ(got.settings(0).key(), "sysctl.net.core.somaxconn");
  EXPECT_EQ(got.settings(0).value(), "4096");
  EXPECT_EQ(got.settings(1).key(), "runtime.tcp_nodelay");

  v1::AgentMessage applied;
  applied.mutable_applied()->set_generation(7);
  v1::KnobResult* k1 = applied.mutable_applied()->add_knobs();
  k1->set_name("sysctl.net.core.somaxconn");
  k1->set_outcome(v1::KNOB_OUTCOME_APPLIED);
  v1::KnobResult* k2 = applied.mutable_applied()->add_knobs();
  k2->set_name("runtime.tcp_nodelay");
  k2->set_outcome(v1::KNOB_OUTCOME_NOT_REACHABLE);
  k2->set_reason("libbooster.so is not loaded");
  ASSERT_TRUE(agent.Send(applied));
  ASSERT_TRUE(agent.Report(2, "h-canary"));
  ASSERT_TRUE(agent.ReadAck());  // messages are handled in order: Applied is recorded

  std::optional<AppliedReport> last = server_->LastApplied("shop", "web-c1");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->generation, 7);
  ASSERT_EQ(last->knobs.size(), 2u);
  EXPECT_EQ(last->knobs[0].outcome, KnobOutcome::kApplied);
  EXPECT_EQ(last->knobs[1].outcome, KnobOutcome::kNotReachable);
  EXPECT_EQ(last->knobs[1].reason, "libbooster.so is not loaded");
  ASSERT_EQ(server_->Connected().size(), 1u);
  ASSERT_TRUE(server_->Connected()[0].last_applied);

  EXPECT_TRUE(agent.Close().ok());
  EXPECT_TRUE(absl::IsNotFound(server_->SendDirective("shop", "web-c1", d)));
  EXPECT_TRUE(server_->LastApplied("shop", "web-c1")) << "kept across reconnects";
}

TEST_F(FeedbackServerTest, NewerStreamOfAPodReplacesTheOlder) {
  Agent old_stream(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(old_stream.Hello());
  ASSERT_TRUE(old_stream.Report(1, "h-canary"));
  ASSERT_TRUE(old_stream.ReadAck());
  Agent new_stream(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(new_stream.Hello("inc-2"));
  ASSERT_TRUE(new_stream.Report(1, "h-canary", "inc-2"));
  ASSERT_TRUE(new_stream.ReadAck());
  // The older stream was cancelled by the server.
  EXPECT_FALSE(old_stream.Read());
  EXPECT_EQ(old_stream.Status().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(server_->SendDirective("shop", "web-c1", {.generation = 1}).ok());
  std::optional<v1::OperatorMessage> m = new_stream.Read();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->has_directive());
  EXPECT_EQ(Streams("canary"), 1);
  EXPECT_TRUE(new_stream.Close().ok());
  EXPECT_EQ(Streams("canary"), 0);
}

TEST_F(FeedbackServerTest, AgentThatDoesNotReadIsDisconnected) {
  StartServer(/*max_pending_writes=*/2);
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Hello());
  ASSERT_TRUE(agent.Report(1, "h-canary"));
  ASSERT_TRUE(agent.ReadAck());  // registered; from now on the agent reads nothing
  DirectiveSpec big;
  big.settings.push_back({"padding", std::string(1 << 20, 'x')});
  absl::Status s;
  int sent = 0;
  // Flow control stops the writes after a few MiB (1 to 4 directives here); then the
  // queue fills.
  while (sent < 64 && (s = server_->SendDirective("shop", "web-c1", big)).ok()) ++sent;
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s << " after " << sent;
  EXPECT_EQ(Streams("canary"), 0);
  EXPECT_TRUE(server_->Connected().empty());
  EXPECT_TRUE(absl::IsNotFound(server_->SendDirective("shop", "web-c1", big)));
  EXPECT_FALSE(agent.Status().ok());
}

TEST_F(FeedbackServerTest, ClientThatDoesNotTrustTheCaFailsTheHandshake) {
  auto untrusting = v1::AgentFeedback::NewStub(Channel(pki_->other_ca_pem));
  Agent agent(untrusting.get(), "Bearer tok-c1");
  agent.Hello();
  EXPECT_FALSE(agent.Read());
  EXPECT_EQ(agent.Status().error_code(), grpc::StatusCode::UNAVAILABLE);

  // Plaintext is not served either.
  auto plaintext = v1::AgentFeedback::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  Agent plain(plaintext.get(), "Bearer tok-c1");
  plain.Hello();
  EXPECT_FALSE(plain.Read());
  EXPECT_EQ(plain.Status().error_code(), grpc::StatusCode::UNAVAILABLE);

  EXPECT_EQ(reviewer_.calls(), 0) << "no stream reached the server";
  EXPECT_EQ(Streams("canary"), 0);
}

TEST_F(FeedbackServerTest, ShutdownEndsOpenStreams) {
  Agent agent(stub_.get(), "Bearer tok-c1");
  ASSERT_TRUE(agent.Hello());
  ASSERT_TRUE(agent.Report(1, "h-canary"));
  ASSERT_TRUE(agent.ReadAck());
  server_->Shutdown(absl::ZeroDuration());
  EXPECT_FALSE(agent.Read());
  EXPECT_FALSE(agent.Status().ok());
  EXPECT_EQ(Streams("canary"), 0);
  EXPECT_TRUE(server_->Connected().empty());
  server_->Shutdown();  // idempotent
}

class FeedbackServerStartTest : public FeedbackServerTest {
 protected:
  absl::Status TryStart(const FeedbackServerOptions& o) {
    FeedbackServerDeps deps;
    deps.reviewer = &reviewer_;
    deps.pods = &pods_;
    deps.store = &store_;
    return FeedbackServer::Start(o, deps).status();
  }
  FeedbackServerOptions Good() {
    FeedbackServerOptions o;
    o.address = "127.0.0.1:0";
    o.cert_file = pki_->server_cert.string();
    o.key_file = pki_->server_key.string();
    return o;
  }
};

TEST_F(FeedbackServerStartTest, RefusesToStartWithoutUsableTls) {
  FeedbackServerOptions o = Good();
  o.cert_file.clear();
  o.key_file.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(TryStart(o)));

  o = Good();
  o.cert_file = (pki_->dir / "missing.crt").string();
  EXPECT_TRUE(absl::IsInvalidArgument(TryStart(o)));

  o = Good();
  o.cert_file = pki_->server_key.string();  // a key where the certificate should be
  absl::Status s = TryStart(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_TRUE(absl::StrContains(s.message(), "no PEM certificate")) << s;

  o = Good();
  o.key_file = pki_->other_key.string();  // a key of another certificate
  s = TryStart(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_TRUE(absl::StrContains(s.message(), "does not match")) << s;

  o = Good();
  o.address = "no-such-host.invalid:1";
  EXPECT_TRUE(absl::IsUnavailable(TryStart(o)));

  EXPECT_TRUE(absl::IsInvalidArgument(FeedbackServer::Start(Good(), {}).status()));
  EXPECT_TRUE(TryStart(Good()).ok());
}

}  // namespace
}  // namespace booster::feedback
