// FeedbackServer: the gRPC endpoint agents stream to (service booster.v1.AgentFeedback,
// docs/feedback.md). TLS only. Each stream is authenticated from its bearer token
// (TokenReviewer + authorize.h against live pods); an accepted agent's reports go into
// the WindowStore (acknowledged once stored or refused), its Applied messages are kept
// per pod, and the operator can push it a Directive.
//
// This header is the seam: gRPC and the generated code appear only in server.cc, so the
// operator (and tests of everything else) never include a gRPC header.
//
// Threads: gRPC's callback threads run the streams; TokenReviews (blocking HTTP) run on
// `auth_threads` threads of the server's own, so a slow API server never blocks gRPC.
// All public methods are thread-safe.
//
//   WindowStore store;
//   auto server = FeedbackServer::Start(
//       {.address = "0.0.0.0:9443", .cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key"},
//       {.reviewer = &reviewer, .pods = &pod_lookup, .store = &store, .observer = &metrics});
//   if (!server.ok()) return server.status();
//   (*server)->SendDirective("shop", "web-7f9c-x2x", directive);
//   (*server)->Shutdown();
#ifndef BOOSTER_OPERATOR_FEEDBACK_SERVER_H_
#define BOOSTER_OPERATOR_FEEDBACK_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/feedback/authorize.h"
#include "operator/feedback/observer.h"
#include "operator/feedback/token_review.h"
#include "operator/feedback/types.h"
#include "operator/feedback/window_store.h"

namespace booster::feedback {

struct FeedbackServerOptions {
  // host:port; port 0 picks a free port (see FeedbackServer::port()).
  std::string address = "0.0.0.0:9443";
  // PEM files of the server certificate (chain) and its private key. Required: the
  // server never serves without TLS. Read once at Start().
  std::string cert_file;
  std::string key_file;
  int auth_threads = 2;
  // TokenReviews waiting for an auth thread; beyond it streams are refused
  // (tokenreview_unavailable) and the agents retry with backoff.
  size_t max_pending_auth = 1024;
  size_t max_streams = 10000;
  // Messages queued to one agent; an agent that stops reading is disconnected.
  size_t max_pending_writes = 256;
  int max_message_bytes = 1 << 20;
  // Pings detect dead agents on idle connections.
  absl::Duration keepalive_time = absl::Minutes(1);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // Connections are closed at this age (plus grace), so every agent reconnects and is
  // authenticated again with its current token and pod labels.
  absl::Duration max_connection_age = absl::Minutes(30);
  absl::Duration max_connection_age_grace = absl::Minutes(1);
  // Applied reports kept per pod (most recent pods) for LastApplied().
  size_t max_applied_pods = 10000;
};

// What the server needs; none is owned, all must outlive the server.
struct FeedbackServerDeps {
  TokenReviewer* reviewer = nullptr;
  const PodLookup* pods = nullptr;
  WindowStore* store = nullptr;
  FeedbackObserver* observer = nullptr;  // optional
  Clock* clock = &RealClock::Get();
};

// An agent with an open, authenticated stream.
struct ConnectedAgent {
  AgentIdentity identity;
  std::optional<HelloInfo> hello;
  std::optional<AppliedReport> last_applied;
  absl::Time connected_at = absl::InfinitePast();
  uint64_t windows_accepted = 0;
};

class FeedbackServer {
 public:
  // Reads the certificate and key, binds `options.address` and starts serving.
  // kInvalidArgument for a missing dependency or unreadable / malformed / mismatched PEM;
  // kUnavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<FeedbackServer>> Start(const FeedbackServerOptions& options,
                                                               const FeedbackServerDeps& deps);
  ~FeedbackServer();  // Shutdown()
  FeedbackServer(const FeedbackServer&) = delete;
  FeedbackServer& operator=(const FeedbackServer&) = delete;

  // The bound port.
  int port() const;

  // Stops accepting streams, lets open ones run for up to `grace`, then cancels them
  // (agents see UNAVAILABLE and reconnect, e.g. to the next leader) and waits until every
  // stream has ended. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  // Queues `directive` on the current stream of pod `pod_namespace`/`pod_name`, with the
  // arm and profile of that agent's identity. kNotFound when the pod has no open stream;
  // kResourceExhausted when the agent is not reading (its stream is then ended).
  absl::Status SendDirective(absl::string_view pod_namespace, absl::string_view pod_name,
                             const DirectiveSpec& directive);

  // The agents connected now, in pod order.
  std::vector<ConnectedAgent> Connected() const;

  // The last Applied report of a pod, kept across reconnects (bounded by
  // max_applied_pods).
  std::optional<AppliedReport> LastApplied(absl::string_view pod_namespace,
                                           absl::string_view pod_name) const;

  class Impl;  // in server.cc

 private:
  explicit FeedbackServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_SERVER_H_
