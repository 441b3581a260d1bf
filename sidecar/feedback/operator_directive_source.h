// The directives of the operator's stream as a DirectiveSource for the agent loop. The
// FeedbackClient's reader thread Offer()s each directive as it arrives — a conversion and
// a mutex, never a wait, so the stream keeps being read — and the loop Poll()s once a
// tick, as it polls the directive file. Only the newest directive waits: one that arrives
// before the loop took the previous one replaces it (each replaces the last anyway).
//
//   OperatorDirectives inbox;
//   on_directive: if (auto answer = inbox.Offer(d).answer) client->Applied(*answer);
//   Agent agent(config, &clock, &inbox, &reporter, &metrics);
#ifndef BOOSTER_SIDECAR_FEEDBACK_OPERATOR_DIRECTIVE_SOURCE_H_
#define BOOSTER_SIDECAR_FEEDBACK_OPERATOR_DIRECTIVE_SOURCE_H_

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/feedback/client/feedback_types.h"
#include "sidecar/loop/directive.h"

namespace booster::agent {

class OperatorDirectives : public DirectiveSource {
 public:
  enum class Result {
    kQueued,   // the loop applies it at its next tick and reports Applied then
    kStale,    // generation not above the last one offered: ignored, as the protocol says
    kRefused,  // nothing of it can be applied: `answer` says why, per setting
  };
  struct Offered {
    Result result = Result::kQueued;
    std::optional<FeedbackApplied> answer;  // set for kRefused: send it as Applied now
  };

  // Thread-safe; called on the stream's reader thread.
  Offered Offer(const FeedbackDirective& directive);

  // The directive queued since the last Poll, if any. Never an error.
  absl::StatusOr<std::optional<Directive>> Poll() override;

 private:
  absl::Mutex mu_;
  std::optional<Directive> pending_ ABSL_GUARDED_BY(mu_);
  int64_t last_generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_OPERATOR_DIRECTIVE_SOURCE_H_
