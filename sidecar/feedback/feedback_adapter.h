// Conversions between the agent loop's records (report/reporter.h, loop/directive.h) and the
// plain types of the operator stream (client/feedback_types.h). Pure: values in, values out;
// FeedbackReporter (feedback_reporter.h) is the thin shell that sends them.
//
//   client->Report(FeedbackWindowFromRecord(record));    // every closed window
//   client->Applied(FeedbackAppliedFromStatus(status));  // after every directive
//   ConvertedDirective c = DirectiveFromFeedback(from_operator);
//   if (c.directive) queue(*c.directive); else client->Applied(c.refusal);
//
// What the operator sees:
//   - a window carries every judged metric that has a value, with its sample count; a
//     missing metric (or a non-finite value) is absent, never 0.
//   - an Applied names every setting of the directive (the knobs) with APPLIED, or FAILED
//     and why; a directive is all or nothing, so when one setting failed the others say
//     they were not applied because of it. A failure that is no setting's (a revert, no
//     target process) is one knob named "revert" or "directive".
//   - a directive from the operator is handed to the loop only when all of it can be
//     applied live; otherwise nothing of it is applied and the refusal says, per setting,
//     NOT_REACHABLE (a key this agent does not apply live) or FAILED (a bad value).
#ifndef BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_ADAPTER_H_
#define BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_ADAPTER_H_

#include <optional>

#include "sidecar/feedback/client/feedback_types.h"
#include "sidecar/loop/directive.h"
#include "sidecar/report/reporter.h"

namespace booster::agent {

// The window as the operator stores it: start, end, the judged metrics with a value, the
// template hash, the generation in force and the application's Go version, CPUs and
// default GODEBUG. The client adds incarnation and sequence.
FeedbackWindow FeedbackWindowFromRecord(const WindowRecord& record);

// The result of a directive (or of a recovery, revert or shutdown) per knob.
FeedbackApplied FeedbackAppliedFromStatus(const AppliedStatus& status);

// Hello's pod and topology, from what the agent found at start.
FeedbackPod FeedbackPodFromIdentity(const AgentIdentity& identity);
FeedbackTopology FeedbackTopologyFromInfo(const TopologyInfo& topology);

struct ConvertedDirective {
  std::optional<Directive> directive;  // set when the agent can run it
  FeedbackApplied refusal;             // otherwise: the answer, every knob with why
};

// The operator's directive in the agent's vocabulary (SetDirectiveSetting). Settings of an
// observe or rollback are ignored: both revert whatever is applied.
ConvertedDirective DirectiveFromFeedback(const FeedbackDirective& directive);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_FEEDBACK_ADAPTER_H_
