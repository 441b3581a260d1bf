// The gRPC adapter of the agent's feedback client: the only file of sidecar/feedback that
// includes gRPC or generated code. What to send and when to drop it is the ReportBuffer's
// (report_buffer.h); how long to wait, the ReconnectBackoff's. What remains is the loop:
//
//   Run thread:  attempt: read token -> new channel -> Connect (Bearer metadata)
//                  | write Hello, last Applied, unacked reports, then new ones as queued
//                  | until the reader sees the stream end (or Stop: drain, WritesDone)
//                  v
//                Finish -> status -> backoff on the Clock (reset if the stream worked) -> attempt
//   Reader:      one per stream; Acks drop reports, Rejects are counted, Directives go to
//                on_directive; at the end of the stream it wakes the writer.
//
// A fresh channel per attempt (with a subchannel pool of its own) means the client's
// backoff is the only one: gRPC's reconnection backoff of a shared, failed subchannel
// would otherwise fail attempts fast for up to two minutes after the operator came back.
#include "sidecar/feedback/client/feedback_client.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "booster/v1/agent.grpc.pb.h"
#include "booster/v1/agent.pb.h"
#include "grpcpp/grpcpp.h"
#include "sidecar/feedback/client/report_buffer.h"

namespace booster::agent {
namespace {

namespace v1 = ::booster::v1;

using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::OperatorMessage>;

// The operator refuses longer tokens without asking the API server (docs/feedback.md).
constexpr size_t kMaxTokenBytes = 16 * 1024;

std::string NewIncarnationId() {
  std::random_device rd;
  std::string out;
  out.reserve(32);
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 8; ++j) {
      out.push_back(kHex[v & 0xf]);
      v >>= 4;
    }
  }
  return out;
}

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

// Number of PEM certificates in `pem`.
int CountCertificates(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return 0;
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++n;
  }
  BIO_free(bio);
  ERR_clear_error();  // the failed read that ends the loop leaves an error queued
  return n;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read token file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (token.empty()) return absl::UnavailableError(absl::StrCat("token file ", path, " is empty"));
  if (token.size() > kMaxTokenBytes) {
    return absl::UnavailableError(
        absl::StrCat("token file ", path, " holds more than ", kMaxTokenBytes, " bytes"));
  }
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::UnavailableError(
          absl::StrCat("token file ", path, " holds a character not allowed in a token"));
    }
  }
  return token;
}

int ClampMs(absl::Duration d) {
  return static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 1, INT32_MAX));
}

// "UNAVAILABLE: failed to connect ..."
std::string StatusText(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message()).ToString();
}

v1::AgentMessage HelloMessage(const FeedbackClientOptions& o, const FeedbackTopology& topology,
                              const std::string& incarnation) {
  v1::AgentMessage m;
  v1::Hello* h = m.mutable_hello();
  h->set_pod_namespace(o.pod.pod_namespace);
  h->set_pod_name(o.pod.name);
  h->set_pod_uid(o.pod.uid);
  h->set_agent_version(o.agent_version);
  h->set_incarnation(incarnation);
  v1::Topology* t = h->mutable_topology();
  t->set_packages(topology.packages);
  t->set_numa_nodes(topology.numa_nodes);
  t->set_cores(topology.cores);
  t->set_pus(topology.pus);
  t->set_cpuset(topology.cpuset);
  t->set_cpu_quota_cores(topology.cpu_quota_cores);
  t->set_memory_limit_bytes(topology.memory_limit_bytes);
  return m;
}

v1::AgentMessage ReportMessage(const ReportBuffer::Entry& e, const std::string& incarnation) {
  v1::AgentMessage m;
  v1::WindowReport* r = m.mutable_report();
  r->set_incarnation(incarnation);
  r->set_sequence(e.sequence);
  r->set_start_unix_nanos(absl::ToUnixNanos(e.window.start));
  r->set_end_unix_nanos(absl::ToUnixNanos(e.window.end));
  for (const auto& [name, metric] : e.window.metrics) {
    v1::Metric* out = r->add_metrics();
    out->set_name(name);
    out->set_value(metric.value);
    out->set_samples(metric.samples);
  }
  r->set_profile_generation(e.window.profile_generation);
  r->set_template_hash(e.window.template_hash);
  r->set_go_version(e.window.go_version);
  r->set_app_cpus(e.window.app_cpus);
  r->set_go_default_godebug(e.window.go_default_godebug);
  if (!e.window.latency_buckets.empty()) {
    v1::LatencyHistogram* h = r->mutable_latency_histogram();
    for (const auto& [bound, count] : e.window.latency_buckets) {
      h->add_upper_bounds(bound);
      h->add_counts(count);
    }
  }
  return m;
}

v1::AgentMessage AppliedMessage(const FeedbackApplied& a) {
  v1::AgentMessage m;
  v1::Applied* out = m.mutable_applied();
  out->set_generation(a.generation);
  for (const FeedbackKnob& k : a.knobs) {
    v1::KnobResult* r = out->add_knobs();
    r->set_name(k.name);
    r->set_reason(k.reason);
    switch (k.outcome) {
      case FeedbackKnobOutcome::kApplied:
        r->set_outcome(v1::KNOB_OUTCOME_APPLIED);
        break;
      case FeedbackKnobOutcome::kFailed:
        r->set_outcome(v1::KNOB_OUTCOME_FAILED);
        break;
      case FeedbackKnobOutcome::kNotReachable:
        r->set_outcome(v1::KNOB_OUTCOME_NOT_REACHABLE);
        break;
      case FeedbackKnobOutcome::kUnspecified:
        r->set_outcome(v1::KNOB_OUTCOME_UNSPECIFIED);
        break;
    }
  }
  return m;
}

FeedbackDirective DirectiveFromProto(const v1::Directive& d) {
  FeedbackDirective out;
  out.generation = d.generation();
  switch (d.action()) {
    case v1::DIRECTIVE_ACTION_OBSERVE:
      out.action = FeedbackAction::kObserve;
      break;
    case v1::DIRECTIVE_ACTION_APPLY:
      out.action = FeedbackAction::kApply;
      break;
    case v1::DIRECTIVE_ACTION_ROLLBACK:
      out.action = FeedbackAction::kRollback;
      break;
    default:
      out.action = FeedbackAction::kUnspecified;  // a newer operator's action
      break;
  }
  out.arm = d.arm();
  out.profile = d.profile();
  for (const v1::Setting& s : d.settings()) out.settings.emplace_back(s.key(), s.value());
  return out;
}

void LogToStderr(absl::string_view line) {
  std::fprintf(stderr, "booster-agent: feedback: %.*s\n", static_cast<int>(line.size()),
               line.data());
}

// 1, 10, 100, ...: how often to log a count that can grow every window.
bool PowerOfTen(uint64_t n) {
  while (n >= 10 && n % 10 == 0) n /= 10;
  return n == 1;
}

}  // namespace

class FeedbackClient::Impl {
 public:
  Impl(FeedbackClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : options_(std::move(options)),
        credentials_(std::move(credentials)),
        incarnation_(NewIncarnationId()),
        buffer_(options_.max_buffered_reports, options_.replay_history_reports),
        topology_(options_.topology) {
    if (!options_.log) options_.log = LogToStderr;
  }
  ~Impl() { Stop(); }

  void Start();
  void Stop();
  absl::StatusOr<uint64_t> Report(FeedbackWindow window);
  void Applied(FeedbackApplied applied);
  FeedbackClientStats Stats() const;
  void SetTopology(FeedbackTopology topology);
  const std::string& incarnation() const { return incarnation_; }

 private:
  void Run();
  // One connection attempt and, if it opens, the stream until it ends.
  struct Outcome {
    bool worked = false;  // the backoff starts over
    std::string what;     // for the log
  };
  Outcome RunStream();
  void ReadLoop(Stream* stream);
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return applied_version_ > applied_sent_version_ || buffer_.Next() != nullptr;
  }
  std::shared_ptr<grpc::Channel> NewChannel() const;

  FeedbackClientOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const std::string incarnation_;

  std::mutex stop_mu_;  // one Stop() at a time
  std::thread thread_;  // Run(); started and joined under stop_mu_ / mu_ (see Start, Stop)

  mutable std::mutex mu_;
  // Wakes the writer (work queued, stream ended, stopping) and the backoff wait.
  std::condition_variable cv_;
  std::condition_variable done_cv_;  // Run() returned
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool run_done_ ABSL_GUARDED_BY(mu_) = false;
  ReportBuffer buffer_ ABSL_GUARDED_BY(mu_);
  std::optional<FeedbackApplied> last_applied_ ABSL_GUARDED_BY(mu_);
  FeedbackTopology topology_ ABSL_GUARDED_BY(mu_);          // for the next Hello
  uint64_t applied_version_ ABSL_GUARDED_BY(mu_) = 0;       // Applied() calls
  uint64_t applied_sent_version_ ABSL_GUARDED_BY(mu_) = 0;  // on the current stream
  // The current stream's context, for Stop() to cancel; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool operator_answered_ ABSL_GUARDED_BY(mu_) = false;
  FeedbackClientStats stats_ ABSL_GUARDED_BY(mu_);  // buffered / dropped filled in Stats()
};

void FeedbackClient::Impl::Start() {
  std::lock_guard<std::mutex> serial(stop_mu_);
  std::lock_guard<std::mutex> l(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void FeedbackClient::Impl::Stop() {
  std::lock_guard<std::mutex> serial(stop_mu_);
  {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();
    if (!started_) return;
    // The writer drains what is queued and half-closes; the operator acknowledges what
    // it read and ends the stream. Past the grace (or blocked on a dead peer), cancel.
    if (!done_cv_.wait_for(l, absl::ToChronoNanoseconds(options_.stop_grace),
                           [this] { return run_done_; })) {
      if (context_ != nullptr) context_->TryCancel();
    }
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<uint64_t> FeedbackClient::Impl::Report(FeedbackWindow window) {
  if (absl::Status s = ValidateFeedbackWindow(window); !s.ok()) return s;
  uint64_t sequence = 0;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t before = buffer_.dropped();
    sequence = buffer_.Add(std::move(window));
    if (buffer_.dropped() != before) dropped = buffer_.dropped();
  }
  cv_.notify_all();
  if (dropped != 0 && PowerOfTen(dropped)) {
    options_.log(absl::StrCat(dropped, " unacknowledged window report(s) dropped so far: the ",
                              options_.max_buffered_reports, "-report buffer is full"));
  }
  return sequence;
}

void FeedbackClient::Impl::Applied(FeedbackApplied applied) {
  {
    std::lock_guard<std::mutex> l(mu_);
    last_applied_ = std::move(applied);
    ++applied_version_;
  }
  cv_.notify_all();
}

FeedbackClientStats FeedbackClient::Impl::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  FeedbackClientStats s = stats_;
  s.reports_dropped = buffer_.dropped();
  s.buffered = buffer_.size();
  return s;
}

void FeedbackClient::Impl::SetTopology(FeedbackTopology topology) {
  std::lock_guard<std::mutex> l(mu_);
  topology_ = std::move(topology);
}

std::shared_ptr<grpc::Channel> FeedbackClient::Impl::NewChannel() const {
  grpc::ChannelArguments args;
  if (!options_.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options_.tls_server_name);
  }
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, ClampMs(options_.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ClampMs(options_.keepalive_timeout));
  // Keep pinging while the stream is idle between windows (gRPC stops after 2 by default).
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return grpc::CreateCustomChannel(options_.address, credentials_, args);
}

void FeedbackClient::Impl::Run() {
  ReconnectBackoff backoff(options_.jitter_seed != 0 ? options_.jitter_seed : RandomSeed(),
                           options_.backoff);
  for (;;) {
    const Outcome outcome = RunStream();
    std::unique_lock<std::mutex> l(mu_);
    if (stopping_) break;
    if (outcome.worked) backoff.Reset();
    const absl::Duration delay = backoff.Next();
    const absl::Time retry_at = options_.clock->Now() + delay;
    stats_.backing_off = true;
    stats_.retry_at = retry_at;
    l.unlock();
    options_.log(absl::StrCat(outcome.what, "; next attempt in ", absl::FormatDuration(delay)));
    l.lock();
    const bool waited = WaitUnlessStopped(*options_.clock, cv_, l, retry_at - options_.clock->Now(),
                                          [this] { return stopping_; });
    stats_.backing_off = false;
    if (!waited) break;
    ++stats_.reconnects;
  }
  std::lock_guard<std::mutex> l(mu_);
  run_done_ = true;
  done_cv_.notify_all();
}

FeedbackClient::Impl::Outcome FeedbackClient::Impl::RunStream() {
  absl::StatusOr<std::string> token = ReadToken(options_.token_file);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return {};
    ++stats_.connect_attempts;
    if (!token.ok()) {
      stats_.last_error = std::string(token.status().message());
      return {.worked = false, .what = absl::StrCat("not connecting: ", stats_.last_error)};
    }
  }
  std::unique_ptr<v1::AgentFeedback::Stub> stub = v1::AgentFeedback::NewStub(NewChannel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", *token));
  // Fail at once when the operator cannot be reached (or its certificate is refused);
  // the backoff decides when to try again.
  context.set_wait_for_ready(false);
  v1::AgentMessage hello;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return {};
    hello = HelloMessage(options_, topology_, incarnation_);
    context_ = &context;
    stream_ended_ = false;
    operator_answered_ = false;
    buffer_.NewStream();
    applied_sent_version_ = 0;  // the latest Applied goes out again on every stream
  }
  const absl::Time opened = options_.clock->Now();
  std::unique_ptr<Stream> stream = stub->Connect(&context);
  std::thread reader([this, s = stream.get()] { ReadLoop(s); });

  bool ok = stream->Write(hello);
  bool drained = false;  // stopping, and everything queued was written
  if (ok) {
    size_t held = 0;
    size_t history = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      stats_.connected = true;
      ++stats_.streams_opened;
      held = buffer_.size();
      history = buffer_.history_size();
    }
    options_.log(absl::StrCat("stream to ", options_.address, " open; ", held,
                              " unacknowledged window report(s) to send, ", history,
                              " acknowledged one(s) to send again"));
  }
  while (ok) {
    v1::AgentMessage message;
    uint64_t sequence = 0;  // 0: an Applied
    bool replay = false;
    uint64_t applied_version = 0;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stream_ended_ || stopping_ || HasWorkLocked(); });
      if (stream_ended_) break;
      if (!HasWorkLocked()) {
        drained = true;
        break;
      }
      if (applied_version_ > applied_sent_version_) {
        message = AppliedMessage(*last_applied_);
        applied_version = applied_version_;
      } else {
        const ReportBuffer::Entry* e = buffer_.Next();
        message = ReportMessage(*e, incarnation_);
        sequence = e->sequence;
        replay = e->sent_before;
        // Marked and counted before the write, because its Ack may be read before Write()
        // returns; the count is taken back if the write fails.
        buffer_.MarkSent(sequence);
        ++stats_.reports_sent;
        if (replay) ++stats_.reports_replayed;
      }
    }
    ok = stream->Write(message);
    std::lock_guard<std::mutex> l(mu_);
    if (sequence != 0) {
      if (!ok) {
        --stats_.reports_sent;
        if (replay) --stats_.reports_replayed;
      }
    } else if (ok) {
      applied_sent_version_ = std::max(applied_sent_version_, applied_version);
      ++stats_.applied_sent;
    }
  }
  if (drained) {
    // Half-close: the operator answers what it read and ends the stream with OK.
    stream->WritesDone();
  }
  // Otherwise the stream has ended (a write fails only then) and the reader sees its end
  // too. Not cancelled here: that would replace the operator's status with CANCELLED.
  reader.join();
  const grpc::Status status = stream->Finish();

  std::lock_guard<std::mutex> l(mu_);
  context_ = nullptr;
  stats_.connected = false;
  Outcome outcome;
  outcome.worked = operator_answered_ || options_.clock->Now() - opened >= options_.healthy_after;
  if (status.ok()) {
    outcome.what = absl::StrCat("the operator at ", options_.address, " ended the stream");
  } else {
    if (!(stopping_ && status.error_code() == grpc::StatusCode::CANCELLED)) {
      stats_.last_error = StatusText(status);
    }
    outcome.what = absl::StrCat("stream to ", options_.address, " failed: ", StatusText(status));
  }
  return outcome;
}

void FeedbackClient::Impl::ReadLoop(Stream* stream) {
  v1::OperatorMessage m;
  while (stream->Read(&m)) {
    switch (m.body_case()) {
      case v1::OperatorMessage::kAck: {
        std::lock_guard<std::mutex> l(mu_);
        operator_answered_ = true;
        if (m.ack().incarnation() == incarnation_) {
          stats_.reports_acked += buffer_.Ack(m.ack().sequence());
        }
        break;
      }
      case v1::OperatorMessage::kReject: {
        const v1::Reject& r = m.reject();
        const std::string reason = r.reason().empty() ? "unknown" : r.reason();
        {
          std::lock_guard<std::mutex> l(mu_);
          operator_answered_ = true;
          ++stats_.rejects[reason];
        }
        options_.log(absl::StrCat("the operator refused window report ", r.sequence(), ": ", reason,
                                  ": ", r.message()));
        break;
      }
      case v1::OperatorMessage::kDirective: {
        {
          std::lock_guard<std::mutex> l(mu_);
          operator_answered_ = true;
          ++stats_.directives_received;
        }
        if (options_.on_directive) options_.on_directive(DirectiveFromProto(m.directive()));
        break;
      }
      case v1::OperatorMessage::BODY_NOT_SET:
        break;  // a message of a newer operator
    }
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stream_ended_ = true;
  }
  cv_.notify_all();
}

absl::StatusOr<std::unique_ptr<FeedbackClient>> FeedbackClient::Create(
    FeedbackClientOptions options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError("feedback client: the operator address is required");
  }
  if (options.token_file.empty()) {
    return absl::InvalidArgumentError("feedback client: a token file is required");
  }
  if (CountCertificates(options.ca_pem) == 0) {
    // An empty root set would make gRPC fall back to the system's roots.
    return absl::InvalidArgumentError(
        "feedback client: the operator's CA holds no PEM certificate");
  }
  if (options.max_buffered_reports == 0) {
    return absl::InvalidArgumentError("feedback client: max_buffered_reports must be >= 1");
  }
  const ReconnectBackoffOptions& b = options.backoff;
  if (b.initial <= absl::ZeroDuration() || b.max < b.initial || !(b.jitter >= 0) ||
      !(b.jitter < 1)) {
    return absl::InvalidArgumentError(
        "feedback client: backoff needs 0 < initial <= max and jitter in [0, 1)");
  }
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("feedback client: a clock is required");
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.ca_pem;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(ssl);
  if (credentials == nullptr) {
    return absl::InvalidArgumentError("feedback client: cannot make TLS credentials");
  }
  return std::unique_ptr<FeedbackClient>(
      new FeedbackClient(std::make_unique<Impl>(std::move(options), std::move(credentials))));
}

FeedbackClient::FeedbackClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FeedbackClient::~FeedbackClient() { Stop(); }

void FeedbackClient::Start() { impl_->Start(); }

void FeedbackClient::Stop() { impl_->Stop(); }

absl::StatusOr<uint64_t> FeedbackClient::Report(FeedbackWindow window) {
  return impl_->Report(std::move(window));
}

void FeedbackClient::Applied(FeedbackApplied applied) { impl_->Applied(std::move(applied)); }

FeedbackClientStats FeedbackClient::Stats() const { return impl_->Stats(); }

void FeedbackClient::SetTopology(FeedbackTopology topology) {
  impl_->SetTopology(std::move(topology));
}

const std::string& FeedbackClient::incarnation() const { return impl_->incarnation(); }

}  // namespace booster::agent
