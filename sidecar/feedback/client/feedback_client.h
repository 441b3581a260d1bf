// FeedbackClient: the agent's end of the agent <-> operator stream (docs/feedback.md,
// service booster.v1.AgentFeedback). One background thread keeps one stream open to the
// operator over TLS, authenticated with the pod's projected service-account token; it
// sends Hello, then every window report the operator has not acknowledged yet, oldest
// first, then new reports and Applied results as they come, and hands Directives to a
// callback. When the stream ends (operator restart, leader change, refusal, network) it
// reconnects after a jittered backoff (1 s doubling to 30 s, on the injected Clock) and
// replays the unacknowledged reports, each once per stream; acknowledged ones are never
// resent. The operator dedupes by (incarnation, sequence), so a replay counts once.
//
// This header is the seam: gRPC and the generated code appear only in feedback_client.cc.
//
// Safety: the server is always verified against `ca_pem` (never an insecure channel,
// never the system roots); the token is re-read from `token_file` at every connection
// attempt (projected tokens rotate) and sent only as `authorization: Bearer` metadata.
// Reports are held in memory only: what is unacknowledged when the process exits is lost.
//
// Threads: every public method is thread-safe. `on_directive` runs on the client's reader
// thread; it must return promptly (the operator disconnects an agent that stops reading)
// and must not call Stop().
//
//   absl::StatusOr<std::unique_ptr<FeedbackClient>> client = FeedbackClient::Create({
//       .address = "booster-operator.booster-system.svc:9443",
//       .ca_pem = ca, .token_file = "/var/run/secrets/booster/token",
//       .pod = {"shop", "web-7f9c-x2x", uid}, .agent_version = "0.1.0",
//       .on_directive = [&](const FeedbackDirective& d) { agent.Queue(d); }});
//   if (!client.ok()) return client.status();
//   (*client)->Start();
//   (*client)->Report(window);        // every closed window
//   (*client)->Applied(result);       // after every directive
//   (*client)->Stop();
#ifndef BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_CLIENT_H_
#define BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "sidecar/feedback/client/feedback_types.h"
#include "sidecar/feedback/client/reconnect_backoff.h"

namespace booster::agent {

struct FeedbackClientOptions {
  // host:port of the operator's feedback endpoint (its Service, port 9443).
  std::string address;
  // PEM certificate(s) of the CA the operator's certificate must chain to. Required.
  std::string ca_pem;
  // The name the server certificate must carry, when it is not the host of `address`
  // (e.g. the address is an IP). "" = the host of `address`.
  std::string tls_server_name;
  // The projected service-account token (audience booster-operator); read at every
  // connection attempt.
  std::string token_file;

  // For Hello: informational, the operator takes the identity from the token.
  FeedbackPod pod;
  std::string agent_version;
  FeedbackTopology topology;

  // Unacknowledged reports held; when full the oldest is dropped (and counted).
  size_t max_buffered_reports = 1000;
  // Acknowledged reports kept and sent again on every new stream: an operator leader that
  // took over never saw what its predecessor acknowledged, and a step's verdict needs the
  // whole step (the server counts a window once, so the same leader ignores them). 720 is
  // an hour of 5 s windows.
  size_t replay_history_reports = 720;
  ReconnectBackoffOptions backoff;
  // A stream counts as having worked — the next backoff starts again at `initial` — once
  // the operator sent anything on it or it stayed open this long (Clock time).
  absl::Duration healthy_after = absl::Minutes(1);
  // Seed of the backoff's jitter; 0 = random.
  uint64_t jitter_seed = 0;
  // HTTP/2 pings on the connection find an operator that vanished without closing it
  // (the server permits one every 10 s).
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // How long Stop() lets the stream deliver what is queued and end cleanly before it
  // cancels it. Real time: it bounds how long an exiting agent waits.
  absl::Duration stop_grace = absl::Seconds(2);

  // Every Directive received, in order. Optional.
  std::function<void(const FeedbackDirective&)> on_directive;
  // One line per event worth a log (stream opened or ended, report refused, reports
  // dropped); called from the client's threads and from Report(). Default: stderr,
  // prefixed "booster-agent: feedback: ".
  std::function<void(absl::string_view)> log;
  // For backoff and stream age; not owned, outlives the client.
  Clock* clock = &RealClock::Get();
};

class FeedbackClient {
 public:
  // kInvalidArgument for an empty address or token file, a CA without a PEM certificate,
  // an unusable buffer size or backoff.
  static absl::StatusOr<std::unique_ptr<FeedbackClient>> Create(FeedbackClientOptions options);
  ~FeedbackClient();  // Stop()
  FeedbackClient(const FeedbackClient&) = delete;
  FeedbackClient& operator=(const FeedbackClient&) = delete;

  // Starts the background thread (once; no effect after the first call or after Stop()).
  void Start();

  // Sends what is queued for up to `stop_grace`, ends the stream and joins the threads.
  // Idempotent. Reports still unacknowledged are lost.
  void Stop();

  // Gives `window` the next sequence number (1, 2, ...) and queues it; returns the
  // sequence. Works before Start() (held until a stream is open). kInvalidArgument, and
  // no sequence used, when ValidateFeedbackWindow refuses the window.
  absl::StatusOr<uint64_t> Report(FeedbackWindow window);

  // Queues an Applied message. Not acknowledged by the protocol: the latest one is sent
  // again after Hello on every new stream, so an operator that restarted learns it.
  void Applied(FeedbackApplied applied);

  FeedbackClientStats Stats() const;

  // What the next Hello says about the machine, replacing options.topology: for an agent
  // that learns it after Create. Called before Start(), the first Hello carries it.
  void SetTopology(FeedbackTopology topology);

  // This run's incarnation (32 random hex digits, chosen at Create), as in Hello and
  // every WindowReport.
  const std::string& incarnation() const;

  class Impl;  // in feedback_client.cc

 private:
  explicit FeedbackClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_CLIENT_H_
