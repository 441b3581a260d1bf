#include "sidecar/feedback/operator_directive_source.h"

#include <utility>

#include "sidecar/feedback/feedback_adapter.h"

namespace booster::agent {

OperatorDirectives::Offered OperatorDirectives::Offer(const FeedbackDirective& directive) {
  ConvertedDirective c = DirectiveFromFeedback(directive);
  absl::MutexLock l(&mu_);
  // A generation is handled once, refused or not: an operator that sends its current
  // directive again (say, on a new stream) has its answer already — the client sends the
  // latest Applied again on every stream.
  if (directive.generation <= last_generation_) return {Result::kStale, std::nullopt};
  last_generation_ = directive.generation;
  if (!c.directive.has_value()) return {Result::kRefused, std::move(c.refusal)};
  pending_ = std::move(c.directive);
  return {Result::kQueued, std::nullopt};
}

absl::StatusOr<std::optional<Directive>> OperatorDirectives::Poll() {
  absl::MutexLock l(&mu_);
  std::optional<Directive> d = std::move(pending_);
  pending_.reset();
  return d;
}

}  // namespace booster::agent
