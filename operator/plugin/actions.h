// pause, resume, promote, abort, retry: what each verb writes on a BoosterProfile, decided
// from the profile as read, or why it is refused. The writes are exactly what the
// operator's state machine reads (operator/rollout/state_machine.cc): the annotation
// booster.dev/paused=true (and spec.rollout.paused) for pause and resume, and for the
// one-shot actions a *new* value of booster.dev/promote-now, booster.dev/abort or
// booster.dev/retry, since the machine acts once per distinct value (status.handled
// keeps the values acted on). A verb that the machine would ignore in the profile's
// phase, or that would only act later by surprise (an abort token left on a Pending
// profile would abort its next rollout), is refused with the reason. Pure.
//
//   absl::StatusOr<Action> a = PlanAction(Verb::kAbort, profile, absl::Now());
//   if (a.ok() && !a->patch.is_null()) client.Patch(..., PatchType::kMerge, a->patch);
#ifndef BOOSTER_OPERATOR_PLUGIN_ACTIONS_H_
#define BOOSTER_OPERATOR_PLUGIN_ACTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/plugin/args.h"

namespace booster::plugin {

struct Action {
  // A JSON merge patch of the profile, carrying metadata.resourceVersion so that it
  // applies only to the profile the decision was made on (409 otherwise: re-read and
  // decide again). Null when there is nothing to write (pausing a paused profile).
  nlohmann::json patch;
  // What was (or will be, once the patch lands) done, for the user.
  std::string summary;
};

// kFailedPrecondition with a message saying why when the verb makes no sense in the
// profile's phase; kInvalidArgument for a verb that writes nothing (get, status, explain).
absl::StatusOr<Action> PlanAction(Verb verb, const nlohmann::json& profile, absl::Time now);

// A token for a one-shot annotation: the time in microseconds, made different from
// `current` and `handled` if it happens to equal one of them.
std::string NewToken(absl::Time now, const std::string& current, const std::string& handled);

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_ACTIONS_H_
