// FeedbackObserver: what the feedback server tells the rest of the operator as it
// happens (streams opening and closing, windows accepted or dropped, refusals, Applied
// messages), so the process can export metrics (prometheus_observer.h) or log, without
// the server knowing about either. Calls come from gRPC threads, concurrently; they must
// be quick and must not call back into the server.
//
//   class Log : public FeedbackObserver {
//     void Rejected(RejectReason r, absl::string_view detail) override { LOG(r, detail); }
//   };
#ifndef BOOSTER_OPERATOR_FEEDBACK_OBSERVER_H_
#define BOOSTER_OPERATOR_FEEDBACK_OBSERVER_H_

#include "absl/strings/string_view.h"
#include "operator/feedback/authorize.h"
#include "operator/feedback/types.h"
#include "operator/feedback/window_store.h"

namespace booster::feedback {

class FeedbackObserver {
 public:
  virtual ~FeedbackObserver() = default;
  // An authenticated stream started / ended. Every StreamOpened is followed by exactly one
  // StreamClosed for the same identity, before the agent sees the stream's end.
  virtual void StreamOpened(const AgentIdentity& /*agent*/) {}
  virtual void StreamClosed(const AgentIdentity& /*agent*/) {}
  // A report was stored, or not (result is not kAccepted), before it is acknowledged.
  virtual void WindowAccepted(const AgentIdentity& /*agent*/) {}
  virtual void WindowDropped(const AgentIdentity& /*agent*/, AddResult /*result*/) {}
  // A stream was refused, before the agent sees its status.
  virtual void Rejected(RejectReason /*reason*/, absl::string_view /*detail*/) {}
  virtual void Applied(const AgentIdentity& /*agent*/, const AppliedReport& /*report*/) {}
  // A well-formed WindowReport said something of the application's program.
  virtual void AppFactsReported(const AgentIdentity& /*agent*/, const AppFacts& /*facts*/) {}
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_OBSERVER_H_
