// Tests of the agent's feedback client against the real operator server
// (operator/feedback/server.h) over TLS, with a CA and certificates made by the openssl
// command in a temp dir at test time, a fake TokenReview and fake pods; and against a
// scripted operator (a plain gRPC service in this file) where the test must control which
// reports the operator acknowledges. Time for the client's backoff is a FakeClock the
// tests move; everything else waits on conditions with deadlines.
#include "sidecar/feedback/client/feedback_client.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "booster/v1/agent.grpc.pb.h"
#include "booster/v1/agent.pb.h"
#include "common/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "operator/feedback/prometheus_observer.h"
#include "operator/feedback/server.h"
#include "operator/feedback/test_pki.h"
#include "prometheus/registry.h"
#include "sidecar/feedback/client/test_operator.h"

namespace booster::agent {
namespace {

namespace v1 = ::booster::v1;
namespace fs = std::filesystem;
using feedback::Arm;
using feedback::FeedbackServer;
using feedback::PodInfo;
using feedback::StepId;
using feedback::TokenReviewResult;
using feedback::WindowStore;
using test_operator::Eventually;
using test_operator::FakePods;
using test_operator::FakeReviewer;
using test_operator::ReviewFor;

constexpr char kServiceName[] = "booster-operator.booster-system.svc";
constexpr char kProfile[] = "shop/web-boost";
const StepId kStep{
    .generation = 2, .step = 1, .started = absl::FromUnixSeconds(1'700'000'000)};
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

std::string ReadFile(const fs::path& p) { return ::booster::feedback::ReadTestFile(p); }

void WriteFile(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::trunc) << content;
}

// Throwaway PKI (operator/feedback/test_pki.h): a CA, a server certificate it signed for
// kServiceName and 127.0.0.1, and an unrelated CA.
using Pki = ::booster::feedback::TestPki;

Pki MakePki() {
  absl::StatusOr<Pki> pki = ::booster::feedback::MakeTestPki(kServiceName, "feedback-client");
  if (!pki.ok()) {
    ADD_FAILURE() << pki.status();
    return {};
  }
  return *pki;
}

feedback::PodInfo EnrolledPod(const std::string& name, const std::string& arm) {
  return test_operator::EnrolledPod(name, arm, kProfile);
}

// Window i of the canary: [t0 + 30i s, t0 + 30(i+1) s), latencyP99 = i ms.
FeedbackWindow Window(int i, const std::string& hash = "h-canary") {
  FeedbackWindow w;
  w.start = kT0 + absl::Seconds(30 * i);
  w.end = w.start + absl::Seconds(30);
  w.metrics["latencyP99"] = {.value = 0.001 * i, .samples = 1000};
  w.metrics["throughput"] = {.value = 250, .samples = 7500};
  w.template_hash = hash;
  w.profile_generation = 2;
  return w;
}

double Metric(prometheus::Registry& registry, const std::string& family, const std::string& label,
              const std::string& value) {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const auto& l : m.label) {
        if (l.name == label && l.value == value) return m.counter.value;
      }
    }
  }
  return -1;
}

// A stand-in operator whose behaviour per stream the test scripts: it records every
// message and the bearer token of each stream, and `script(stream index, ...)` decides
// what to answer.
class ScriptedOperator final : public v1::AgentFeedback::Service {
 public:
  using Io = grpc::ServerReaderWriter<v1::OperatorMessage, v1::AgentMessage>;
  // Runs one stream; gets the stream's index (0, 1, ...) and a recorder for its messages.
  using Script = std::function<grpc::Status(int stream, Io* io,
                                            const std::function<void(const v1::AgentMessage&)>&)>;

  explicit ScriptedOperator(Script script) : script_(std::move(script)) {}

  grpc::Status Connect(grpc::ServerContext* ctx, Io* io) override {
    int index = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      index = static_cast<int>(streams_.size());
      streams_.emplace_back();
      auto it = ctx->client_metadata().find("authorization");
      tokens_.push_back(it == ctx->client_metadata().end()
                            ? ""
                            : std::string(it->second.data(), it->second.size()));
    }
    return script_(index, io, [this, index](const v1::AgentMessage& m) {
      std::lock_guard<std::mutex> l(mu_);
      streams_[index].push_back(m);
    });
  }

  // Messages received per stream.
  std::vector<std::vector<v1::AgentMessage>> streams() {
    std::lock_guard<std::mutex> l(mu_);
    return streams_;
  }
  std::vector<std::string> tokens() {
    std::lock_guard<std::mutex> l(mu_);
    return tokens_;
  }

  // Serves on 127.0.0.1:0 with `credentials`; the bound port in *port.
  std::unique_ptr<grpc::Server> Serve(std::shared_ptr<grpc::ServerCredentials> credentials,
                                      int* port) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", std::move(credentials), port);
    builder.RegisterService(this);
    return builder.BuildAndStart();
  }

 private:
  Script script_;
  std::mutex mu_;
  std::vector<std::vector<v1::AgentMessage>> streams_;
  std::vector<std::string> tokens_;
};

// "H" for Hello, the sequence for a report, "A<generation>" for Applied.
std::string Describe(const std::vector<v1::AgentMessage>& stream) {
  std::vector<std::string> parts;
  for (const v1::AgentMessage& m : stream) {
    if (m.has_hello()) parts.push_back("H");
    if (m.has_report()) parts.push_back(absl::StrCat(m.report().sequence()));
    if (m.has_applied()) parts.push_back(absl::StrCat("A", m.applied().generation()));
  }
  return absl::StrJoin(parts, " ");
}

class FeedbackClientTest : public ::testing::Test {
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
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = pki_->dir / info->name();
    fs::create_directories(dir_);
    token_file_ = dir_ / "token";
    WriteFile(token_file_, "tok-c1\n");
    pods_.Put(EnrolledPod("web-c1", "canary"));
    reviewer_.Set("tok-c1", ReviewFor("web-c1"));
    store_.BeginStep(kProfile, kStep, {"h-baseline", "h-canary"});
    StartServer(0);
  }

  void TearDown() override {
    for (auto& c : clients_) c->Stop();
    clients_.clear();
  }

  // Starts the operator's server on `port` (0: any); the same store, pods and reviewer
  // across restarts.
  void StartServer(int port) {
    server_.reset();
    absl::StatusOr<std::unique_ptr<FeedbackServer>> s =
        test_operator::StartTestServer(*pki_, port, &reviewer_, &pods_, &store_, &observer_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_GT(server_->port(), 0);
    if (port != 0) {
      ASSERT_EQ(server_->port(), port);
    }
  }

  // The operator restarts: open streams end, and it comes back on the same port.
  // `new_leader`: the operator that comes back holds none of the windows (a leader that
  // took over); otherwise the same store (the same process reconnecting).
  void RestartServer(FeedbackClient* client, bool new_leader = false) {
    const int port = server_->port();
    server_->Shutdown(absl::ZeroDuration());
    server_.reset();
    if (new_leader) {
      store_.Forget(kProfile);
      store_.BeginStep(kProfile, kStep, {"h-baseline", "h-canary"});
    }
    // The client noticed and waits for its backoff (Clock time, which only the test moves).
    ASSERT_TRUE(Eventually([&] {
      FeedbackClientStats s = client->Stats();
      return s.backing_off && !s.connected;
    }));
    StartServer(port);
  }

  FeedbackClientOptions Options() {
    FeedbackClientOptions o;
    o.address = absl::StrCat("127.0.0.1:", server_->port());
    o.ca_pem = pki_->ca_pem;
    o.tls_server_name = kServiceName;
    o.token_file = token_file_.string();
    o.pod = {.pod_namespace = "shop", .name = "web-c1-believed", .uid = "uid-believed"};
    o.agent_version = "0.2.0-test";
    o.topology = {.packages = 1, .numa_nodes = 1, .cores = 4, .pus = 8, .cpuset = "0-3"};
    o.jitter_seed = 1;
    o.clock = &clock_;
    o.stop_grace = absl::Seconds(20);
    o.on_directive = [this](const FeedbackDirective& d) {
      std::lock_guard<std::mutex> l(mu_);
      directives_.push_back(d);
    };
    o.log = [this](absl::string_view line) {
      std::lock_guard<std::mutex> l(mu_);
      logs_.emplace_back(line);
    };
    return o;
  }

  FeedbackClient* NewClient(const FeedbackClientOptions& options) {
    absl::StatusOr<std::unique_ptr<FeedbackClient>> c = FeedbackClient::Create(options);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return nullptr;
    clients_.push_back(*std::move(c));
    return clients_.back().get();
  }

  // Waits until the client is backing off, then moves the clock to its next attempt.
  // Returns the delay it waited for.
  absl::Duration AdvanceToRetry(FeedbackClient* client) {
    FeedbackClientStats s;
    EXPECT_TRUE(Eventually([&] {
      s = client->Stats();
      return s.backing_off;
    }));
    const absl::Duration delay = s.retry_at - clock_.Now();
    clock_.Advance(delay);
    return delay;
  }

  bool WaitAcked(FeedbackClient* client, uint64_t n) {
    return Eventually([&] { return client->Stats().reports_acked >= n; });
  }

  size_t Stored() const { return store_.WindowCount(kProfile, kStep, Arm::kCanary); }

  // The window starts stored for the canary, as window indexes (see Window()).
  std::vector<int> StoredWindows() {
    absl::StatusOr<feedback::StepWindows> q = store_.Query(kProfile, kStep);
    EXPECT_TRUE(q.ok()) << q.status();
    std::vector<int> out;
    if (!q.ok()) return out;
    auto it = q->arm(Arm::kCanary).metrics.find("latencyP99");
    if (it == q->arm(Arm::kCanary).metrics.end()) return out;
    for (const feedback::MetricPoint& p : it->second) {
      out.push_back(static_cast<int>((p.start - kT0) / absl::Seconds(30)));
    }
    return out;
  }

  double Duplicates() {
    return Metric(registry_, "booster_operator_agent_windows_dropped_total", "reason", "duplicate");
  }

  std::vector<FeedbackDirective> Directives() {
    std::lock_guard<std::mutex> l(mu_);
    return directives_;
  }

  static Pki* pki_;
  fs::path dir_;
  fs::path token_file_;
  FakeClock clock_;
  FakeReviewer reviewer_;
  FakePods pods_;
  WindowStore store_;
  prometheus::Registry registry_;
  feedback::PrometheusFeedbackObserver observer_{registry_};
  std::unique_ptr<FeedbackServer> server_;
  std::mutex mu_;
  std::vector<FeedbackDirective> directives_;
  std::vector<std::string> logs_;
  // Declared last: stopped before the server and everything they call back into.
  std::vector<std::unique_ptr<FeedbackClient>> clients_;
};

Pki* FeedbackClientTest::pki_ = nullptr;

TEST_F(FeedbackClientTest, StreamsHelloAndReportsThatTheOperatorStoresAndAcks) {
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->incarnation().size(), 32u);
  absl::StatusOr<uint64_t> seq = client->Report(Window(0));  // before Start: held
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 1u);
  client->Start();
  EXPECT_EQ(*client->Report(Window(1)), 2u);
  FeedbackWindow with_histogram = Window(2);
  with_histogram.latency_buckets = {{0.001, 900}, {0.01, 1000}, {INFINITY, 1000}};
  EXPECT_EQ(*client->Report(with_histogram), 3u);
  ASSERT_TRUE(WaitAcked(client, 3)) << client->Stats().last_error;

  EXPECT_EQ(Stored(), 3u);
  EXPECT_EQ(StoredWindows(), (std::vector<int>{0, 1, 2}));
  absl::StatusOr<feedback::StepWindows> q = store_.Query(kProfile, kStep);
  ASSERT_TRUE(q.ok());
  const std::vector<feedback::MetricPoint>& p99 = q->arm(Arm::kCanary).metrics.at("latencyP99");
  EXPECT_EQ(p99[0].pod, "web-c1") << "filed under the token's pod, not Hello's";
  EXPECT_DOUBLE_EQ(p99[2].value, 0.002);
  EXPECT_EQ(p99[2].samples, 1000);
  EXPECT_EQ(p99[2].end - p99[2].start, absl::Seconds(30));
  EXPECT_EQ(p99[0].latency_buckets, nullptr);
  ASSERT_NE(p99[2].latency_buckets, nullptr) << "the histogram went over the stream";
  EXPECT_EQ(*p99[2].latency_buckets, with_histogram.latency_buckets);
  EXPECT_EQ(q->arm(Arm::kCanary).metrics.at("throughput").size(), 3u);

  std::vector<feedback::ConnectedAgent> connected = server_->Connected();
  ASSERT_EQ(connected.size(), 1u);
  ASSERT_TRUE(connected[0].hello);
  EXPECT_EQ(connected[0].hello->claimed_pod, "web-c1-believed");
  EXPECT_EQ(connected[0].hello->claimed_uid, "uid-believed");
  EXPECT_EQ(connected[0].hello->agent_version, "0.2.0-test");
  EXPECT_EQ(connected[0].hello->incarnation, client->incarnation());
  EXPECT_EQ(connected[0].hello->topology.cores, 4);
  EXPECT_EQ(connected[0].hello->topology.pus, 8);
  EXPECT_EQ(connected[0].hello->topology.cpuset, "0-3");
  EXPECT_EQ(reviewer_.tokens(), (std::vector<std::string>{"tok-c1"}));

  FeedbackClientStats s = client->Stats();
  EXPECT_TRUE(s.connected);
  EXPECT_EQ(s.connect_attempts, 1u);
  EXPECT_EQ(s.reconnects, 0u);
  EXPECT_EQ(s.streams_opened, 1u);
  EXPECT_EQ(s.reports_sent, 3u);
  EXPECT_EQ(s.reports_replayed, 0u);
  EXPECT_EQ(s.reports_acked, 3u);
  EXPECT_EQ(s.buffered, 0u);
  EXPECT_EQ(s.reports_dropped, 0u);
  EXPECT_TRUE(s.rejects.empty());
  EXPECT_EQ(s.last_error, "");

  client->Stop();
  EXPECT_FALSE(client->Stats().connected);
  EXPECT_TRUE(Eventually([&] { return server_->Connected().empty(); }));
  client->Stop();  // idempotent
}

TEST_F(FeedbackClientTest, RejectedReportIsCountedByReasonAndNotResent) {
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(client->Report(Window(0, "h-old-template")).ok());
  ASSERT_TRUE(client->Report(Window(1)).ok());
  ASSERT_TRUE(WaitAcked(client, 2)) << client->Stats().last_error;
  FeedbackClientStats s = client->Stats();
  EXPECT_EQ(s.rejects, (std::map<std::string, uint64_t>{{"stale_template", 1}}));
  EXPECT_EQ(s.buffered, 0u) << "a refused report is acknowledged too: resending cannot help";
  EXPECT_EQ(StoredWindows(), (std::vector<int>{1}));
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_TRUE(std::any_of(logs_.begin(), logs_.end(), [](const std::string& line) {
    return absl::StrContains(line, "refused window report 1: stale_template");
  }));
}

// A new leader never saw what the old one acknowledged: the agent sends its acknowledged
// history again with what was not acknowledged, and the new leader holds every window of
// the step; the same operator reconnecting counts each window once.
TEST_F(FeedbackClientTest, ANewLeaderGetsEveryWindowOfTheStepAndEachIsStoredOnce) {
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  client->Start();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Report(Window(i)).ok());
  ASSERT_TRUE(WaitAcked(client, 3)) << client->Stats().last_error;

  RestartServer(client, /*new_leader=*/true);
  EXPECT_EQ(Stored(), 0u) << "the new leader starts empty";
  // Windows keep closing while the operator is away.
  for (int i = 3; i < 6; ++i) ASSERT_TRUE(client->Report(Window(i)).ok());
  EXPECT_EQ(client->Stats().buffered, 3u);
  AdvanceToRetry(client);
  ASSERT_TRUE(WaitAcked(client, 6)) << client->Stats().last_error;
  ASSERT_TRUE(client->Report(Window(6)).ok());
  ASSERT_TRUE(WaitAcked(client, 7));
  ASSERT_TRUE(Eventually([&] { return Stored() == 7u; })) << Stored();
  EXPECT_EQ(StoredWindows(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Duplicates(), 0);
  FeedbackClientStats s = client->Stats();
  EXPECT_EQ(s.reports_sent, 10u);
  EXPECT_EQ(s.reports_replayed, 3u) << "the acknowledged history, once";
  EXPECT_EQ(s.connect_attempts, 2u);
  EXPECT_EQ(s.reconnects, 1u);
  EXPECT_EQ(s.streams_opened, 2u);
  EXPECT_TRUE(s.connected);
  EXPECT_FALSE(s.last_error.empty()) << "the operator's shutdown ended the first stream";
  EXPECT_EQ(reviewer_.tokens().size(), 2u) << "authenticated again on the new stream";

  // The same operator again (its store kept): the history arrives as duplicates.
  RestartServer(client);
  AdvanceToRetry(client);
  ASSERT_TRUE(client->Report(Window(7)).ok());
  ASSERT_TRUE(WaitAcked(client, 8));
  ASSERT_TRUE(Eventually([&] { return Duplicates() == 7; })) << Duplicates();
  EXPECT_EQ(StoredWindows(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(FeedbackClientTest, ReportsWrittenButNotAcknowledgedAreReplayedOnceOnTheNextStream) {
  // Stream 0 acknowledges report 1 only, reads 2 and 3, and ends like a leader that lost
  // its lease; stream 1 acknowledges everything.
  ScriptedOperator op([](int stream, ScriptedOperator::Io* io,
                         const std::function<void(const v1::AgentMessage&)>& record) {
    v1::AgentMessage in;
    int reports = 0;
    while (io->Read(&in)) {
      record(in);
      if (!in.has_report()) continue;
      ++reports;
      if (stream == 0 && reports > 1) {
        if (reports == 3) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "leader changed");
        continue;
      }
      v1::OperatorMessage ack;
      ack.mutable_ack()->set_incarnation(in.report().incarnation());
      ack.mutable_ack()->set_sequence(in.report().sequence());
      io->Write(ack);
    }
    return grpc::Status::OK;
  });
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({ReadFile(pki_->server_key), ReadFile(pki_->server_cert)});
  int port = 0;
  std::unique_ptr<grpc::Server> server = op.Serve(grpc::SslServerCredentials(ssl), &port);
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  FeedbackClientOptions o = Options();
  o.address = absl::StrCat("127.0.0.1:", port);
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Report(Window(i)).ok());
  client->Applied({.generation = 4});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->Stats().backing_off; }));
  EXPECT_EQ(client->Stats().last_error, "UNAVAILABLE: leader changed");
  EXPECT_EQ(client->Stats().reports_acked, 1u);
  ASSERT_TRUE(client->Report(Window(3)).ok());
  AdvanceToRetry(client);
  ASSERT_TRUE(WaitAcked(client, 4));

  std::vector<std::vector<v1::AgentMessage>> streams = op.streams();
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(Describe(streams[0]), "H A4 1 2 3");
  EXPECT_EQ(Describe(streams[1]), "H A4 1 2 3 4")
      << "1 (acknowledged, the history a new leader lacks), 2 and 3 once each, in order, "
         "then the new one";
  EXPECT_EQ(streams[1][0].hello().incarnation(), client->incarnation());
  EXPECT_EQ(streams[1][2].report().incarnation(), client->incarnation());
  EXPECT_EQ(op.tokens(), (std::vector<std::string>{"Bearer tok-c1", "Bearer tok-c1"}));
  FeedbackClientStats s = client->Stats();
  EXPECT_EQ(s.reports_sent, 7u);
  EXPECT_EQ(s.reports_replayed, 3u);
  EXPECT_EQ(s.reports_acked, 4u);
  EXPECT_EQ(s.buffered, 0u);
  client->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

// What goes over the wire for one window: every metric by its CRD name with its value and
// samples, and the application's Go version, CPUs and default GODEBUG.
TEST_F(FeedbackClientTest, AReportCarriesEveryMetricByNameAndTheApplicationsFacts) {
  ScriptedOperator op([](int, ScriptedOperator::Io* io,
                         const std::function<void(const v1::AgentMessage&)>& record) {
    v1::AgentMessage in;
    while (io->Read(&in)) {
      record(in);
      if (!in.has_report()) continue;
      v1::OperatorMessage ack;
      ack.mutable_ack()->set_incarnation(in.report().incarnation());
      ack.mutable_ack()->set_sequence(in.report().sequence());
      io->Write(ack);
    }
    return grpc::Status::OK;
  });
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({ReadFile(pki_->server_key), ReadFile(pki_->server_cert)});
  int port = 0;
  std::unique_ptr<grpc::Server> server = op.Serve(grpc::SslServerCredentials(ssl), &port);
  ASSERT_NE(server, nullptr);
  FeedbackClientOptions o = Options();
  o.address = absl::StrCat("127.0.0.1:", port);
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);

  // The CRD's names (crds/boosterprofile.yaml), as the agent's window metrics carry them.
  const std::vector<std::string> names = {
      "latencyP50",    "latencyP99",    "latencyP999",   "throughput",      "errorRate",
      "cpuPerRequest", "cpuThrottling", "runQueueDelay", "listenOverflows", "retransmits",
      "memoryRss",     "goGcCpuShare",  "goHeapBytes"};
  FeedbackWindow w = Window(0);
  w.metrics.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    w.metrics[names[i]] = {.value = 1.5 * static_cast<double>(i),
                           .samples = 10 + static_cast<int64_t>(i)};
  }
  w.go_version = "go1.26.0";
  w.app_cpus = 4;
  w.go_default_godebug = "containermaxprocs=0,updatemaxprocs=0";
  ASSERT_TRUE(client->Report(w).ok());
  FeedbackWindow unknown = Window(1);  // a program the agent knows nothing of
  ASSERT_TRUE(client->Report(unknown).ok());
  client->Start();
  ASSERT_TRUE(WaitAcked(client, 2)) << client->Stats().last_error;

  std::vector<std::vector<v1::AgentMessage>> streams = op.streams();
  ASSERT_EQ(streams.size(), 1u);
  ASSERT_EQ(Describe(streams[0]), "H 1 2");
  const v1::WindowReport& r = streams[0][1].report();
  std::map<std::string, std::pair<double, int64_t>> sent;
  for (const v1::Metric& m : r.metrics()) sent[m.name()] = {m.value(), m.samples()};
  ASSERT_EQ(sent.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(sent.count(names[i]), 1u) << names[i];
    EXPECT_EQ(sent[names[i]].first, 1.5 * static_cast<double>(i)) << names[i];
    EXPECT_EQ(sent[names[i]].second, 10 + static_cast<int64_t>(i)) << names[i];
  }
  EXPECT_EQ(r.go_version(), "go1.26.0");
  EXPECT_EQ(r.app_cpus(), 4);
  EXPECT_EQ(r.go_default_godebug(), "containermaxprocs=0,updatemaxprocs=0");
  EXPECT_EQ(streams[0][2].report().go_version(), "");
  EXPECT_EQ(streams[0][2].report().app_cpus(), 0);
  EXPECT_EQ(streams[0][2].report().go_default_godebug(), "");
  client->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

TEST_F(FeedbackClientTest, ClientNeverConnectsToAServerItCannotVerifyAndSaysWhy) {
  struct Case {
    const char* name;
    std::string ca;
    std::string server_name;
    const char* why;  // in last_error
  };
  const std::vector<Case> cases = {
      {"unrelated CA", pki_->other_ca_pem, kServiceName, "certificate verify failed"},
      {"name not in the certificate", pki_->ca_pem, "evil.example.com",
       "evil.example.com is not in peer certificate"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FeedbackClientOptions o = Options();
    o.ca_pem = c.ca;
    o.tls_server_name = c.server_name;
    FeedbackClient* client = NewClient(o);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Report(Window(0)).ok());
    client->Start();
    FeedbackClientStats s;
    ASSERT_TRUE(Eventually([&] {
      s = client->Stats();
      return s.backing_off;
    }));
    EXPECT_FALSE(s.connected);
    EXPECT_EQ(s.connect_attempts, 1u);
    EXPECT_EQ(s.streams_opened, 0u) << "no Hello went out";
    EXPECT_EQ(s.reports_sent, 0u);
    EXPECT_EQ(s.buffered, 1u);
    EXPECT_TRUE(absl::StartsWith(s.last_error, "UNAVAILABLE: ")) << s.last_error;
    EXPECT_TRUE(absl::StrContains(s.last_error, c.why)) << s.last_error;
    client->Stop();
  }
  EXPECT_TRUE(reviewer_.tokens().empty()) << "the token never reached the server";
  EXPECT_EQ(Stored(), 0u);

  // A plaintext server is never spoken to either.
  ScriptedOperator plain(
      [](int, ScriptedOperator::Io*, const std::function<void(const v1::AgentMessage&)>&) {
        return grpc::Status::OK;
      });
  int port = 0;
  std::unique_ptr<grpc::Server> server = plain.Serve(grpc::InsecureServerCredentials(), &port);
  ASSERT_NE(server, nullptr);
  FeedbackClientOptions o = Options();
  o.address = absl::StrCat("127.0.0.1:", port);
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->Stats().backing_off; }));
  EXPECT_EQ(client->Stats().streams_opened, 0u);
  EXPECT_TRUE(absl::StartsWith(client->Stats().last_error, "UNAVAILABLE: "))
      << client->Stats().last_error;
  EXPECT_TRUE(absl::StrContains(client->Stats().last_error, "Ssl handshake failed"))
      << client->Stats().last_error;
  client->Stop();
  EXPECT_TRUE(plain.streams().empty());
  server->Shutdown(std::chrono::system_clock::now());
}

TEST_F(FeedbackClientTest, TokenFileIsReadAgainAtEveryConnection) {
  reviewer_.Set("tok-c1-rotated", ReviewFor("web-c1"));
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(client->Report(Window(0)).ok());
  ASSERT_TRUE(WaitAcked(client, 1)) << client->Stats().last_error;
  EXPECT_EQ(reviewer_.tokens(), (std::vector<std::string>{"tok-c1"}));

  // The kubelet rotates the projected token (atomically, through a symlink swap).
  WriteFile(dir_ / "token.new", "tok-c1-rotated\n");
  fs::rename(dir_ / "token.new", token_file_);
  RestartServer(client);
  AdvanceToRetry(client);
  ASSERT_TRUE(client->Report(Window(1)).ok());
  ASSERT_TRUE(WaitAcked(client, 2)) << client->Stats().last_error;
  EXPECT_EQ(reviewer_.tokens(), (std::vector<std::string>{"tok-c1", "tok-c1-rotated"}));

  // A token file that cannot be read: no attempt reaches the operator, and the error says
  // which file.
  RestartServer(client);
  fs::remove(token_file_);
  AdvanceToRetry(client);
  ASSERT_TRUE(Eventually([&] {
    FeedbackClientStats s = client->Stats();
    return s.backing_off && s.connect_attempts == 3;
  }));
  EXPECT_EQ(client->Stats().last_error,
            absl::StrCat("cannot read token file ", token_file_.string()));
  EXPECT_EQ(reviewer_.tokens().size(), 2u);
  WriteFile(token_file_, "tok-c1\n");
  AdvanceToRetry(client);
  ASSERT_TRUE(client->Report(Window(2)).ok());
  ASSERT_TRUE(WaitAcked(client, 3)) << client->Stats().last_error;
  EXPECT_EQ(reviewer_.tokens().back(), "tok-c1");
}

TEST_F(FeedbackClientTest, FullBufferDropsTheOldestReportsAndCountsThem) {
  FeedbackClientOptions o = Options();
  o.max_buffered_reports = 3;
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Report(Window(i)).ok());
  FeedbackClientStats s = client->Stats();
  EXPECT_EQ(s.buffered, 3u);
  EXPECT_EQ(s.reports_dropped, 2u);
  client->Start();
  ASSERT_TRUE(WaitAcked(client, 3)) << client->Stats().last_error;
  EXPECT_EQ(StoredWindows(), (std::vector<int>{2, 3, 4})) << "the newest windows are kept";
  s = client->Stats();
  EXPECT_EQ(s.reports_sent, 3u);
  EXPECT_EQ(s.reports_dropped, 2u);
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_TRUE(std::any_of(logs_.begin(), logs_.end(), [](const std::string& line) {
    return absl::StrContains(line, "dropped");
  }));
}

TEST_F(FeedbackClientTest, DirectiveReachesOnDirectiveAndAppliedReachesTheOperator) {
  FeedbackClientOptions o = Options();
  o.tls_server_name.clear();  // verified against the certificate's IP address
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(client->Report(Window(0)).ok());
  ASSERT_TRUE(WaitAcked(client, 1)) << client->Stats().last_error;  // registered by now

  feedback::DirectiveSpec d;
  d.generation = 7;
  d.action = feedback::DirectiveAction::kApply;
  d.settings = {{"sysctl.net.core.somaxconn", "4096"}, {"placement", "compact"}};
  ASSERT_TRUE(server_->SendDirective("shop", "web-c1", d).ok());
  ASSERT_TRUE(Eventually([&] { return !Directives().empty(); }));
  FeedbackDirective got = Directives()[0];
  EXPECT_EQ(got.generation, 7);
  EXPECT_EQ(got.action, FeedbackAction::kApply);
  EXPECT_EQ(got.arm, "canary");
  EXPECT_EQ(got.profile, kProfile);
  EXPECT_EQ(got.settings, d.settings);
  EXPECT_EQ(client->Stats().directives_received, 1u);

  client->Applied({.generation = 7,
                   .knobs = {{"sysctl.net.core.somaxconn", FeedbackKnobOutcome::kApplied, ""},
                             {"placement", FeedbackKnobOutcome::kFailed, "no NUMA node free"}}});
  ASSERT_TRUE(Eventually([&] { return server_->LastApplied("shop", "web-c1").has_value(); }));
  std::optional<feedback::AppliedReport> applied = server_->LastApplied("shop", "web-c1");
  EXPECT_EQ(applied->generation, 7);
  ASSERT_EQ(applied->knobs.size(), 2u);
  EXPECT_EQ(applied->knobs[0].outcome, feedback::KnobOutcome::kApplied);
  EXPECT_EQ(applied->knobs[1].outcome, feedback::KnobOutcome::kFailed);
  EXPECT_EQ(applied->knobs[1].reason, "no NUMA node free");

  // A restarted operator has forgotten it; the client says it again after Hello.
  RestartServer(client);
  EXPECT_FALSE(server_->LastApplied("shop", "web-c1"));
  AdvanceToRetry(client);
  ASSERT_TRUE(Eventually([&] { return server_->LastApplied("shop", "web-c1").has_value(); }));
  EXPECT_EQ(server_->LastApplied("shop", "web-c1")->generation, 7);
  EXPECT_TRUE(Eventually([&] { return client->Stats().applied_sent == 2; }))
      << client->Stats().applied_sent;
}

TEST_F(FeedbackClientTest, RefusedStreamBacksOffOnTheClockAndSaysWhy) {
  WriteFile(token_file_, "tok-unknown\n");
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Report(Window(0)).ok());
  client->Start();
  const std::vector<absl::Duration> bases = {absl::Seconds(1), absl::Seconds(2),  absl::Seconds(4),
                                             absl::Seconds(8), absl::Seconds(16), absl::Seconds(30),
                                             absl::Seconds(30)};
  for (size_t i = 0; i < bases.size(); ++i) {
    SCOPED_TRACE(i);
    FeedbackClientStats s;
    // Attempt i+1 happens only once the clock has reached the end of the previous delay.
    ASSERT_TRUE(Eventually([&] {
      s = client->Stats();
      return s.backing_off && s.connect_attempts == i + 1;
    }));
    EXPECT_TRUE(absl::StartsWith(s.last_error, "UNAUTHENTICATED: unauthenticated: "))
        << s.last_error;
    EXPECT_FALSE(s.connected);
    EXPECT_EQ(s.reports_acked, 0u);
    EXPECT_EQ(s.buffered, 1u);
    EXPECT_EQ(reviewer_.tokens().size(), i + 1);
    // Enrolled at last: the next attempt will work.
    if (i + 1 == bases.size()) reviewer_.Set("tok-unknown", ReviewFor("web-c1"));
    const absl::Duration delay = AdvanceToRetry(client);
    EXPECT_LE(delay, bases[i]);
    EXPECT_GE(delay, bases[i] * 0.8);
  }
  ASSERT_TRUE(WaitAcked(client, 1)) << client->Stats().last_error;
  EXPECT_EQ(client->Stats().connect_attempts, bases.size() + 1);
  EXPECT_EQ(Stored(), 1u);

  // The stream worked, so after it the backoff starts over.
  RestartServer(client);
  EXPECT_EQ(client->Stats().reconnects, bases.size());
  const absl::Duration delay = AdvanceToRetry(client);
  EXPECT_LE(delay, absl::Seconds(1));
  EXPECT_GE(delay, absl::Milliseconds(800));
}

TEST_F(FeedbackClientTest, StopDeliversWhatIsQueuedBeforeClosing) {
  FeedbackClient* client = NewClient(Options());
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(client->Report(Window(0)).ok());
  ASSERT_TRUE(WaitAcked(client, 1)) << client->Stats().last_error;
  for (int i = 1; i < 20; ++i) ASSERT_TRUE(client->Report(Window(i)).ok());
  client->Stop();
  EXPECT_EQ(Stored(), 20u);
  FeedbackClientStats s = client->Stats();
  EXPECT_EQ(s.reports_acked, 20u) << "the operator answered everything before the stream ended";
  EXPECT_EQ(s.last_error, "");
  EXPECT_TRUE(Eventually([&] { return server_->Connected().empty(); }));
  ASSERT_TRUE(client->Report(Window(20)).ok());  // after Stop: held, never sent
  client->Start();                               // no effect after Stop
  EXPECT_EQ(client->Stats().reports_sent, 20u);
}

TEST_F(FeedbackClientTest, StopReturnsWhileTheOperatorIsUnreachable) {
  FeedbackClientOptions o = Options();
  server_->Shutdown(absl::ZeroDuration());  // nothing listens on the port any more
  FeedbackClient* client = NewClient(o);
  ASSERT_NE(client, nullptr);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->Stats().backing_off; }));
  EXPECT_TRUE(absl::StartsWith(client->Stats().last_error, "UNAVAILABLE: "))
      << client->Stats().last_error;
  client->Stop();  // the backoff wait ends at once: the fake clock never moves here
  EXPECT_FALSE(client->Stats().backing_off);
}

TEST(FeedbackClientCreateTest, RefusesUnusableOptions) {
  FeedbackClientOptions good;
  good.address = "127.0.0.1:9443";
  good.token_file = "/nonexistent/token";
  good.ca_pem = "";
  struct Case {
    const char* name;
    std::function<void(FeedbackClientOptions&)> change;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no CA", [](FeedbackClientOptions&) {}, "no PEM certificate"},
      {"CA that is not PEM", [](FeedbackClientOptions& o) { o.ca_pem = "not a certificate"; },
       "no PEM certificate"},
      {"no address", [](FeedbackClientOptions& o) { o.address.clear(); }, "address"},
      {"no token file", [](FeedbackClientOptions& o) { o.token_file.clear(); }, "token file"},
  };
  for (const Case& c : cases) {
    FeedbackClientOptions o = good;
    c.change(o);
    absl::StatusOr<std::unique_ptr<FeedbackClient>> client = FeedbackClient::Create(o);
    EXPECT_TRUE(absl::IsInvalidArgument(client.status())) << c.name << ": " << client.status();
    EXPECT_TRUE(absl::StrContains(client.status().message(), c.message))
        << c.name << ": " << client.status();
  }
}

TEST_F(FeedbackClientTest, CreateRefusesUnusableBufferAndBackoff) {
  const std::vector<std::pair<const char*, std::function<void(FeedbackClientOptions&)>>> cases = {
      {"no buffer", [](FeedbackClientOptions& o) { o.max_buffered_reports = 0; }},
      {"zero backoff", [](FeedbackClientOptions& o) { o.backoff.initial = absl::ZeroDuration(); }},
      {"max below initial",
       [](FeedbackClientOptions& o) { o.backoff.max = absl::Milliseconds(1); }},
      {"jitter 1", [](FeedbackClientOptions& o) { o.backoff.jitter = 1; }},
      {"no clock", [](FeedbackClientOptions& o) { o.clock = nullptr; }},
  };
  for (const auto& [name, change] : cases) {
    FeedbackClientOptions o = Options();
    change(o);
    EXPECT_TRUE(absl::IsInvalidArgument(FeedbackClient::Create(o).status())) << name;
  }
  EXPECT_TRUE(FeedbackClient::Create(Options()).ok());
  absl::StatusOr<std::unique_ptr<FeedbackClient>> client = FeedbackClient::Create(Options());
  ASSERT_TRUE(client.ok());
  FeedbackWindow bad = Window(0);
  bad.end = bad.start;
  EXPECT_TRUE(absl::IsInvalidArgument((*client)->Report(bad).status()));
  EXPECT_EQ(*(*client)->Report(Window(0)), 1u) << "a refused window uses no sequence";
}

}  // namespace
}  // namespace booster::agent
