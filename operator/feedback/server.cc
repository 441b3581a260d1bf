// The gRPC adapter of the feedback server: the only file of operator/feedback that
// includes gRPC or generated code. Everything it decides is delegated to the pure parts
// (authorize.h, window_store.h); what remains is the stream's state machine.
//
// One AgentStream (a callback-API reactor) per RPC:
//
//   constructed --no token-------------------------------------------> End(refusal)
//        | token
//        v
//   auth thread: TokenReview + Authorize --refused-------------------> End(refusal)
//        | accepted: registered under its pod, StreamOpened
//        v
//   StartRead <--- OnReadDone(ok): Hello / WindowReport (store, Ack) / Applied
//        | OnReadDone(!ok): the agent closed, went away, or the server is stopping
//        v
//   End(status): unregistered, StreamClosed, Finish once no write is in flight -> OnDone
//
// Writes (Acks, Rejects, Directives from any thread) go through one queue with at most
// one write in flight, as the callback API requires.
#include "operator/feedback/server.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "booster/v1/agent.grpc.pb.h"
#include "booster/v1/agent.pb.h"
#include "common/tsan_annotations.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"
#include "operator/feedback/proto_convert.h"
#include "operator/kube/config.h"

namespace booster::feedback {
namespace {

namespace v1 = ::booster::v1;

// Fixed threads running queued jobs: the TokenReviews, which block on HTTP and so must
// not run on gRPC's callback threads.
class AuthPool {
 public:
  AuthPool(int threads, size_t max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Run(); });
  }
  ~AuthPool() { Stop(); }

  // False when stopped or full.
  bool Post(std::function<void()> job) {
    absl::MutexLock l(&mu_);
    if (stopped_ || jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
    return true;
  }

  // Runs the queued jobs, then joins. Idempotent; not called concurrently (Impl::Shutdown
  // is serialised).
  void Stop() {
    {
      absl::MutexLock l(&mu_);
      stopped_ = true;
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || !jobs_.empty(); }

  void Run() {
    for (;;) {
      std::function<void()> job;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(this, &AuthPool::Ready));
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const size_t max_queued_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// The gRPC status of a refused stream; its message starts with the reason token.
grpc::Status RefusalStatus(RejectReason reason, absl::string_view detail) {
  grpc::StatusCode code = grpc::StatusCode::UNAUTHENTICATED;
  switch (reason) {
    case RejectReason::kTokenReviewUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;  // fail closed, but tell the agent to retry
      break;
    case RejectReason::kPodNotFound:
    case RejectReason::kPodUidMismatch:
    case RejectReason::kNotEnrolled:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    default:
      break;
  }
  return grpc::Status(code, absl::StrCat(RejectReasonName(reason), ": ", detail));
}

// The token of `authorization: Bearer <token>`, or "".
std::string BearerToken(const grpc::CallbackServerContext& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  absl::string_view value(it->second.data(), it->second.size());
  value = absl::StripAsciiWhitespace(value);
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return "";
  }
  return std::string(absl::StripAsciiWhitespace(value.substr(kScheme.size())));
}

v1::OperatorMessage DirectiveMessage(const DirectiveSpec& d, const AgentIdentity& agent) {
  v1::OperatorMessage m;
  v1::Directive* out = m.mutable_directive();
  out->set_generation(d.generation);
  switch (d.action) {
    case DirectiveAction::kObserve:
      out->set_action(v1::DIRECTIVE_ACTION_OBSERVE);
      break;
    case DirectiveAction::kApply:
      out->set_action(v1::DIRECTIVE_ACTION_APPLY);
      break;
    case DirectiveAction::kRollback:
      out->set_action(v1::DIRECTIVE_ACTION_ROLLBACK);
      break;
  }
  out->set_arm(std::string(ArmName(agent.arm)));
  out->set_profile(agent.profile);
  for (const auto& [k, v] : d.settings) {
    v1::Setting* s = out->add_settings();
    s->set_key(k);
    s->set_value(v);
  }
  return m;
}

// kOk, or kInvalidArgument saying what is wrong with the PEM pair.
absl::Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem,
                          const FeedbackServerOptions& o) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("feedback server: ", o.cert_file, " holds no PEM certificate"));
  }
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  absl::Status s;
  if (key == nullptr) {
    s = absl::InvalidArgumentError(
        absl::StrCat("feedback server: ", o.key_file, " holds no PEM private key"));
  } else if (X509_check_private_key(cert, key) != 1) {
    s = absl::InvalidArgumentError(absl::StrCat("feedback server: the key in ", o.key_file,
                                                " does not match the certificate in ",
                                                o.cert_file));
  }
  EVP_PKEY_free(key);
  X509_free(cert);
  return s;
}

int ClampMs(absl::Duration d) {
  return static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 1, INT32_MAX));
}

// For ThreadSanitizer only (common/tsan_annotations.h): gRPC calls OnDone once every
// operation of the RPC has completed and every other reaction has returned
// (grpcpp/support/server_callback.h), then destroys the call's state. It keeps that order
// with reference counts inside the uninstrumented libgrpc++, so each reaction says so on
// its way out, and OnDone picks it up first thing. Nothing else is ordered by it:
// OnReadDone and OnWriteDone may run at the same time, as gRPC allows.
class ReactionReturns {
 public:
  explicit ReactionReturns(const void* reactor) : reactor_(reactor) {}
  ~ReactionReturns() { TsanHappensBefore(reactor_); }
  ReactionReturns(const ReactionReturns&) = delete;
  ReactionReturns& operator=(const ReactionReturns&) = delete;

 private:
  const void* const reactor_;
};

}  // namespace

class AgentStream;

class FeedbackServer::Impl final : public v1::AgentFeedback::CallbackService {
 public:
  Impl(const FeedbackServerOptions& options, const FeedbackServerDeps& deps)
      : options_(options), deps_(deps), auth_(options.auth_threads, options.max_pending_auth) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::OperatorMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

  absl::Status Serve(const std::string& cert_pem, const std::string& key_pem);
  void Shutdown(absl::Duration grace);
  absl::Status SendDirective(absl::string_view ns, absl::string_view pod,
                             const DirectiveSpec& directive);
  std::vector<ConnectedAgent> Connected() const;
  std::optional<AppliedReport> LastApplied(absl::string_view ns, absl::string_view pod) const;
  int port() const { return port_; }

  // For AgentStream.
  const FeedbackServerOptions& options() const { return options_; }
  const FeedbackServerDeps& deps() const { return deps_; }
  FeedbackObserver& observer() { return deps_.observer != nullptr ? *deps_.observer : none_; }
  bool PostAuth(std::function<void()> job) { return auth_.Post(std::move(job)); }
  // Registers an authenticated stream under its pod, replacing (and cancelling) an older
  // stream of the same pod. kResourceExhausted at max_streams, kUnavailable when stopping.
  absl::Status Register(const std::shared_ptr<AgentStream>& stream, const std::string& pod_key);
  void Unregister(const AgentStream* stream, const std::string& pod_key);
  void RecordApplied(const std::string& pod_key, const AppliedReport& report);
  void StreamBorn();
  void StreamGone();

 private:
  const FeedbackServerOptions options_;
  const FeedbackServerDeps deps_;
  FeedbackObserver none_;
  AuthPool auth_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex shutdown_mu_;  // one Shutdown() at a time

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int live_streams_ ABSL_GUARDED_BY(mu_) = 0;  // reactors not yet done
  std::map<std::string, std::shared_ptr<AgentStream>> streams_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, AppliedReport> applied_ ABSL_GUARDED_BY(mu_);
};

class AgentStream final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::OperatorMessage> {
 public:
  AgentStream(FeedbackServer::Impl* server, grpc::CallbackServerContext* ctx)
      : server_(server), ctx_(ctx), connected_at_(server->deps().clock->Now()) {}

  // Starts the stream; `self` keeps the reactor alive until OnDone.
  void Begin(std::shared_ptr<AgentStream> self) {
    self_ = std::move(self);
    std::string token = BearerToken(*ctx_);
    if (token.empty()) {
      Refuse(RejectReason::kMissingToken,
             "no `authorization: Bearer <token>` metadata (send the projected "
             "service-account token with audience booster-operator)");
      return;
    }
    // The job holds no reference: the reactor cannot reach OnDone before it has been
    // finished, which only the job (or End) does.
    if (!server_->PostAuth([this, token = std::move(token)] { Authenticate(token); })) {
      Refuse(RejectReason::kTokenReviewUnavailable,
             "the operator is stopping or has too many TokenReviews pending; retry later");
    }
  }

  void OnReadDone(bool ok) override {
    const ReactionReturns returns(this);
    if (!ok) {
      End(grpc::Status::OK);
      return;
    }
    if (Handle(in_)) StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    const ReactionReturns returns(this);
    const v1::OperatorMessage* next = nullptr;
    bool finish = false;
    grpc::Status status;
    {
      absl::MutexLock l(&mu_);
      out_.pop_front();
      writing_ = false;
      if (!ok) out_.clear();  // the stream is broken; the read side ends it
      if (!out_.empty()) {
        writing_ = true;
        next = &out_.front();
      } else if (ending_ && !finished_) {
        finished_ = true;
        finish = true;
        status = final_status_;
      }
    }
    if (next != nullptr) StartWrite(next);
    if (finish) Finish(status);
  }

  void OnDone() override {
    TsanHappensAfter(this);  // every reaction has returned (ReactionReturns)
    {
      absl::MutexLock l(&mu_);
      done_ = true;
    }
    FeedbackServer::Impl* server = server_;
    std::shared_ptr<AgentStream> keep = std::move(self_);
    keep.reset();  // may destroy this; nothing of it is touched below
    server->StreamGone();
  }

  // Queues a message to the agent; from any thread.
  absl::Status Enqueue(v1::OperatorMessage message) {
    const v1::OperatorMessage* start = nullptr;
    {
      absl::MutexLock l(&mu_);
      if (ending_) return absl::NotFoundError("the agent's stream is ending");
      if (out_.size() >= server_->options().max_pending_writes) {
        EndLocked(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                               "the agent does not read its stream"));
        // The write in flight never completes while the agent does not read: cancel, so
        // that it fails and the stream can finish.
        if (!done_) ctx_->TryCancel();
        return absl::ResourceExhaustedError(
            absl::StrCat("agent ", PodKey(), " does not read its stream; disconnected"));
      }
      out_.push_back(std::move(message));  // references to queued elements stay valid
      if (!writing_) {
        writing_ = true;
        start = &out_.back();
      }
    }
    if (start != nullptr) StartWrite(start);
    return absl::OkStatus();
  }

  // Ends the stream because a newer stream of the same pod took over: cancelled (so a
  // pending read ends now) and closed before the newer stream is served, so the observer
  // never counts two streams for one pod for longer than that.
  void Supersede() {
    absl::MutexLock l(&mu_);
    if (ending_) return;
    EndLocked(
        grpc::Status(grpc::StatusCode::CANCELLED, "superseded by a newer stream of the same pod"));
    if (!done_) ctx_->TryCancel();  // after EndLocked: the observer hears first
  }

  ConnectedAgent Snapshot() const {
    absl::MutexLock l(&mu_);
    ConnectedAgent a;
    a.identity = identity_;
    a.hello = hello_;
    a.last_applied = last_applied_;
    a.connected_at = connected_at_;
    a.windows_accepted = windows_accepted_;
    return a;
  }

  const AgentIdentity& identity() const { return identity_; }  // set before registration

 private:
  std::string PodKey() const { return identity_.PodKey(); }

  // On an auth thread.
  void Authenticate(const std::string& token) {
    const FeedbackServerDeps& deps = server_->deps();
    absl::StatusOr<TokenReviewResult> review = deps.reviewer->Review(token);
    if (!review.ok()) {
      Refuse(RejectReason::kTokenReviewUnavailable, review.status().message());
      return;
    }
    AuthDecision d = Authorize(*review, *deps.pods);
    if (!d.accepted()) {
      Refuse(d.reason, d.detail);
      return;
    }
    identity_ = *d.identity;  // written once, before any reader can see the stream
    if (absl::Status s = server_->Register(self_, PodKey()); !s.ok()) {
      End(grpc::Status(absl::IsResourceExhausted(s) ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                                    : grpc::StatusCode::UNAVAILABLE,
                       std::string(s.message())));
      return;
    }
    bool opened = false;
    {
      absl::MutexLock l(&mu_);
      // A directive flood between Register() and here may have ended the stream already.
      if (!ending_) {
        registered_ = opened = true;
        server_->observer().StreamOpened(identity_);
      }
    }
    if (!opened) {
      server_->Unregister(this, PodKey());
      return;
    }
    StartRead(&in_);
  }

  void Refuse(RejectReason reason, absl::string_view detail) {
    server_->observer().Rejected(reason, detail);
    End(RefusalStatus(reason, detail));
  }

  // Handles one message; false when the stream is ending.
  bool Handle(const v1::AgentMessage& m) {
    switch (m.body_case()) {
      case v1::AgentMessage::kHello: {
        absl::MutexLock l(&mu_);
        hello_ = HelloFromProto(m.hello());
        return true;
      }
      case v1::AgentMessage::kReport:
        return HandleReport(m.report());
      case v1::AgentMessage::kApplied: {
        AppliedReport r = AppliedFromProto(m.applied(), server_->deps().clock->Now());
        {
          absl::MutexLock l(&mu_);
          last_applied_ = r;
        }
        server_->RecordApplied(PodKey(), r);
        server_->observer().Applied(identity_, r);
        return true;
      }
      case v1::AgentMessage::BODY_NOT_SET:
        return true;  // a message of a newer agent: ignored
    }
    return true;
  }

  bool HandleReport(const v1::WindowReport& r) {
    {
      absl::MutexLock l(&mu_);
      if (!hello_) {
        EndLocked(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                               "hello_required: send Hello before the first WindowReport"));
        return false;
      }
    }
    absl::StatusOr<Window> w = WindowFromProto(r, identity_);
    const absl::Status parsed = w.status();
    AddResult result =
        parsed.ok() ? server_->deps().store->Add(identity_.profile, identity_.arm, *std::move(w))
                    : AddResult::kInvalid;
    if (parsed.ok()) {
      if (std::optional<AppFacts> facts = AppFactsFromProto(r)) {
        server_->observer().AppFactsReported(identity_, *facts);
      }
    }
    if (result == AddResult::kAccepted) {
      server_->observer().WindowAccepted(identity_);
    } else if (result != AddResult::kHeld) {
      server_->observer().WindowDropped(identity_, result);
    }
    v1::OperatorMessage reject;
    std::string why;
    switch (result) {
      case AddResult::kInvalid:
        why = parsed.ok() ? "invalid window" : std::string(parsed.message());
        break;
      case AddResult::kStaleTemplate:
        why = absl::StrCat("template hash ", r.template_hash(),
                           " is not the one the current step of ", identity_.profile,
                           " measures for the ", ArmName(identity_.arm), " arm");
        break;
      case AddResult::kNoStep:
        why = absl::StrCat("no rollout step of ", identity_.profile,
                           " is being measured, and no room to hold the window until one is");
        break;
      case AddResult::kAccepted:
      case AddResult::kDuplicate:
      case AddResult::kHeld:        // filed when the profile's step opens
      case AddResult::kBeforeStep:  // a replay of the history: expected, not an error
        break;
    }
    if (!why.empty()) {
      v1::Reject* rj = reject.mutable_reject();
      rj->set_reason(std::string(AddResultName(result)));
      rj->set_message(why);
      rj->set_incarnation(r.incarnation());
      rj->set_sequence(r.sequence());
    }
    v1::OperatorMessage ack;
    {
      absl::MutexLock l(&mu_);
      if (result == AddResult::kAccepted) ++windows_accepted_;
      // One incarnation per stream is normal; a stream cycling through many keeps only
      // the latest few.
      if (acked_.size() >= 16 && acked_.count(r.incarnation()) == 0) acked_.clear();
      uint64_t& high = acked_[r.incarnation()];
      high = std::max(high, r.sequence());
      ack.mutable_ack()->set_incarnation(r.incarnation());
      ack.mutable_ack()->set_sequence(high);
    }
    if (reject.has_reject() && !Enqueue(std::move(reject)).ok()) return false;
    return Enqueue(std::move(ack)).ok();
  }

  void End(grpc::Status status) {
    absl::MutexLock l(&mu_);
    EndLocked(std::move(status));
  }

  // The first call decides the final status: unregisters, tells the observer, and
  // finishes now or, with a write in flight, from OnWriteDone.
  void EndLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (ending_) return;
    ending_ = true;
    final_status_ = std::move(status);
    if (registered_) {
      registered_ = false;
      // Neither call takes this stream's lock.
      server_->Unregister(this, PodKey());
      server_->observer().StreamClosed(identity_);
    }
    if (!writing_ && !finished_) {
      finished_ = true;
      // Finish() does not run reactions inline, so it is safe under mu_.
      Finish(final_status_);
    }
  }

  FeedbackServer::Impl* const server_;
  grpc::CallbackServerContext* const ctx_;
  const absl::Time connected_at_;
  std::shared_ptr<AgentStream> self_;  // cleared in OnDone
  AgentIdentity identity_;             // immutable once registered
  v1::AgentMessage in_;                // the one read in flight

  mutable absl::Mutex mu_;
  std::deque<v1::OperatorMessage> out_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  std::optional<HelloInfo> hello_ ABSL_GUARDED_BY(mu_);
  std::optional<AppliedReport> last_applied_ ABSL_GUARDED_BY(mu_);
  uint64_t windows_accepted_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> acked_ ABSL_GUARDED_BY(mu_);  // incarnation -> highest
};

grpc::ServerBidiReactor<v1::AgentMessage, v1::OperatorMessage>* FeedbackServer::Impl::Connect(
    grpc::CallbackServerContext* ctx) {
  auto stream = std::make_shared<AgentStream>(this, ctx);
  StreamBorn();
  AgentStream* raw = stream.get();
  raw->Begin(std::move(stream));
  return raw;
}

void FeedbackServer::Impl::StreamBorn() {
  absl::MutexLock l(&mu_);
  ++live_streams_;
}

void FeedbackServer::Impl::StreamGone() {
  absl::MutexLock l(&mu_);
  --live_streams_;
}

absl::Status FeedbackServer::Impl::Register(const std::shared_ptr<AgentStream>& stream,
                                            const std::string& pod_key) {
  std::shared_ptr<AgentStream> older;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("the operator is stopping");
    auto it = streams_.find(pod_key);
    if (it == streams_.end() && streams_.size() >= options_.max_streams) {
      return absl::ResourceExhaustedError(
          absl::StrCat("too many agent streams (", options_.max_streams, ")"));
    }
    if (it != streams_.end()) older = std::move(it->second);
    streams_[pod_key] = stream;
  }
  // The newest stream of a pod wins: the older one is usually a connection the agent
  // has already given up on.
  if (older != nullptr) older->Supersede();
  return absl::OkStatus();
}

void FeedbackServer::Impl::Unregister(const AgentStream* stream, const std::string& pod_key) {
  absl::MutexLock l(&mu_);
  auto it = streams_.find(pod_key);
  if (it != streams_.end() && it->second.get() == stream) streams_.erase(it);
}

void FeedbackServer::Impl::RecordApplied(const std::string& pod_key, const AppliedReport& report) {
  absl::MutexLock l(&mu_);
  applied_[pod_key] = report;
  while (applied_.size() > std::max<size_t>(options_.max_applied_pods, 1)) {
    auto oldest = std::min_element(
        applied_.begin(), applied_.end(),
        [](const auto& a, const auto& b) { return a.second.received < b.second.received; });
    applied_.erase(oldest);
  }
}

absl::Status FeedbackServer::Impl::Serve(const std::string& cert_pem, const std::string& key_pem) {
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({key_pem, cert_pem});
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.address, grpc::SslServerCredentials(ssl), &port_);
  builder.RegisterService(this);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ClampMs(options_.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ClampMs(options_.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, ClampMs(options_.max_connection_age));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             ClampMs(options_.max_connection_age_grace));
  // Agents may ping idle connections every 10 s without being sent GOAWAY.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    return absl::UnavailableError(
        absl::StrCat("feedback server: cannot listen on ", options_.address));
  }
  return absl::OkStatus();
}

void FeedbackServer::Impl::Shutdown(absl::Duration grace) {
  std::lock_guard<std::mutex> serial(shutdown_mu_);
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopping_ = true;
  }
  // Cancels what still runs at the deadline and returns once every reactor is finished;
  // reactors waiting for a TokenReview are finished by the auth threads, still running.
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  }
  auth_.Stop();
  {
    // OnDone may still be running on a callback thread when Shutdown() returns.
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(
        +[](int* live) { return *live == 0; }, &live_streams_));
    stopped_ = true;
    streams_.clear();
  }
}

absl::Status FeedbackServer::Impl::SendDirective(absl::string_view ns, absl::string_view pod,
                                                 const DirectiveSpec& directive) {
  std::shared_ptr<AgentStream> stream;
  {
    absl::MutexLock l(&mu_);
    auto it = streams_.find(absl::StrCat(ns, "/", pod));
    if (it != streams_.end()) stream = it->second;
  }
  if (stream == nullptr) {
    return absl::NotFoundError(absl::StrCat("no agent stream from pod ", ns, "/", pod));
  }
  return stream->Enqueue(DirectiveMessage(directive, stream->identity()));
}

std::vector<ConnectedAgent> FeedbackServer::Impl::Connected() const {
  std::vector<std::shared_ptr<AgentStream>> streams;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [key, s] : streams_) streams.push_back(s);
  }
  std::vector<ConnectedAgent> out;
  out.reserve(streams.size());
  for (const auto& s : streams) out.push_back(s->Snapshot());
  return out;
}

std::optional<AppliedReport> FeedbackServer::Impl::LastApplied(absl::string_view ns,
                                                               absl::string_view pod) const {
  absl::MutexLock l(&mu_);
  auto it = applied_.find(absl::StrCat(ns, "/", pod));
  if (it == applied_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::unique_ptr<FeedbackServer>> FeedbackServer::Start(
    const FeedbackServerOptions& options, const FeedbackServerDeps& deps) {
  if (deps.reviewer == nullptr || deps.pods == nullptr || deps.store == nullptr ||
      deps.clock == nullptr) {
    return absl::InvalidArgumentError(
        "feedback server: reviewer, pods, store and clock are required");
  }
  if (options.cert_file.empty() || options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "feedback server: a TLS certificate and key are required (it never serves plaintext)");
  }
  absl::StatusOr<std::string> cert = kube::ReadFileToString(options.cert_file);
  if (!cert.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feedback server: certificate: ", cert.status().message()));
  }
  absl::StatusOr<std::string> key = kube::ReadFileToString(options.key_file);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feedback server: key: ", key.status().message()));
  }
  if (absl::Status s = CheckKeyPair(*cert, *key, options); !s.ok()) return s;

  auto impl = std::make_unique<Impl>(options, deps);
  if (absl::Status s = impl->Serve(*cert, *key); !s.ok()) {
    impl->Shutdown(absl::ZeroDuration());
    return s;
  }
  return std::unique_ptr<FeedbackServer>(new FeedbackServer(std::move(impl)));
}

FeedbackServer::FeedbackServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FeedbackServer::~FeedbackServer() { Shutdown(); }

int FeedbackServer::port() const { return impl_->port(); }

void FeedbackServer::Shutdown(absl::Duration grace) { impl_->Shutdown(grace); }

absl::Status FeedbackServer::SendDirective(absl::string_view pod_namespace,
                                           absl::string_view pod_name,
                                           const DirectiveSpec& directive) {
  return impl_->SendDirective(pod_namespace, pod_name, directive);
}

std::vector<ConnectedAgent> FeedbackServer::Connected() const { return impl_->Connected(); }

std::optional<AppliedReport> FeedbackServer::LastApplied(absl::string_view pod_namespace,
                                                         absl::string_view pod_name) const {
  return impl_->LastApplied(pod_namespace, pod_name);
}

}  // namespace booster::feedback
