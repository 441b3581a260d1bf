// The agent's messages (booster/v1/agent.proto) turned into the feedback server's own
// types: the only place, with server.cc, that reads generated code. Everything in a
// message is untrusted input from the network; WindowFromProto validates a report
// (ValidateWindow) and the other two only copy fields, which the server checks against
// the authenticated identity. The fuzz target fuzz/agent_message_fuzzer.cc feeds them
// arbitrary bytes parsed as an AgentMessage.
//
//   absl::StatusOr<Window> w = WindowFromProto(message.report(), stream_identity);
//   if (!w.ok()) Reject(w.status());
#ifndef BOOSTER_OPERATOR_FEEDBACK_PROTO_CONVERT_H_
#define BOOSTER_OPERATOR_FEEDBACK_PROTO_CONVERT_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "booster/v1/agent.pb.h"
#include "operator/feedback/types.h"
#include "operator/feedback/window_store.h"

namespace booster::feedback {

// The Hello's claims, copied as they are (Authorize compares them with the token's pod).
HelloInfo HelloFromProto(const ::booster::v1::Hello& h);

// The Window of a report from `agent`: pod fields (name, uid, creation time, node) from
// the identity, the rest from the report. Unknown metric names are ignored (a newer
// agent); a name given twice, or a window ValidateWindow refuses, is kInvalidArgument.
absl::StatusOr<Window> WindowFromProto(const ::booster::v1::WindowReport& r,
                                       const AgentIdentity& agent);

// The knob outcomes of an Applied message, received at `now`; an outcome this operator
// does not know is kUnspecified.
AppliedReport AppliedFromProto(const ::booster::v1::Applied& a, absl::Time now);

// The report's facts about the application's program; nullopt when it says none. A value
// the operator would not trust to compare (a version over 64 bytes or not printable, a
// CPU count outside 1..4096, a GODEBUG over 1024 bytes) is left out.
std::optional<AppFacts> AppFactsFromProto(const ::booster::v1::WindowReport& r);

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_PROTO_CONVERT_H_
