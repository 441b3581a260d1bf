// The Reporter of `booster-agent run` when an operator address is set: every window goes
// to the operator over the feedback stream (FeedbackClient, sidecar/feedback/client/), every
// directive result as Applied, and the operator's directives come back through
// directives() into the agent loop. The conversions are feedback_adapter.h's; this is the
// thin shell around the client.
//
// The client is created with the reporter (a bad CA is an error before the agent touches
// anything) and started at Hello, when the agent knows its topology, so the first Hello
// on the wire carries it. Until a stream is open, and while the operator is away, the
// client holds up to 1000 unacknowledged reports and replays them after a reconnect.
//
// Logs (stderr, kept short for `kubectl logs`): the client's stream events, one line per
// directive received and per Applied, one line for the first window, and a line for a
// window the client refused; not one line per window (the counts are on /metrics).
//
//   absl::StatusOr<std::unique_ptr<FeedbackReporter>> r = FeedbackReporter::Create(options);
//   metrics.EnableFeedbackMetrics([&] { return (*r)->Stats(); });
//   Agent agent(config, &clock, (*r)->directives(), r->get(), &metrics);
//   agent.Run(stop);   // reverts before it returns; its last Applied is queued
//   (*r)->Stop();      // sends what is queued (up to the client's stop_grace), then ends
#ifndef BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_REPORTER_H_
#define BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_REPORTER_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/feedback/client/feedback_client.h"
#include "sidecar/feedback/operator_directive_source.h"
#include "sidecar/report/reporter.h"

namespace booster::agent {

struct FeedbackReporterOptions {
  // Address, CA, token file, pod, agent version. `topology` is filled in at Hello and
  // `on_directive` by the reporter; a caller's on_directive is ignored.
  FeedbackClientOptions client;
  // Also gets every Hello, Applied and Report, e.g. the JSON lines of an explicit
  // --report-file. Not owned; may be null.
  Reporter* tee = nullptr;
  // The reporter's own log lines; default: stderr, prefixed "booster-agent: ".
  std::function<void(absl::string_view)> log;
};

class FeedbackReporter : public Reporter {
 public:
  // FeedbackClient::Create's errors (kInvalidArgument for an address, token file or CA it
  // cannot use).
  static absl::StatusOr<std::unique_ptr<FeedbackReporter>> Create(FeedbackReporterOptions options);
  ~FeedbackReporter() override;  // Stop()

  void Hello(const HelloInfo& info) override;
  void Applied(const AppliedStatus& status) override;
  void Report(const WindowRecord& record) override;

  // The operator's directives, for the Agent. Owned by the reporter.
  DirectiveSource* directives() { return &directives_; }

  FeedbackClientStats Stats() const { return client_->Stats(); }

  // Ends the stream after sending what is queued (the client's stop_grace at most).
  // Call after the agent's shutdown revert, so its Applied goes out. Idempotent.
  void Stop() { client_->Stop(); }

 private:
  explicit FeedbackReporter(FeedbackReporterOptions options);
  void OnDirective(const FeedbackDirective& directive);  // the client's reader thread

  FeedbackReporterOptions options_;
  OperatorDirectives directives_;
  absl::Mutex mu_;
  bool first_window_logged_ ABSL_GUARDED_BY(mu_) = false;
  // Declared last: destroyed (stopped) before what its callback uses.
  std::unique_ptr<FeedbackClient> client_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_REPORTER_H_
