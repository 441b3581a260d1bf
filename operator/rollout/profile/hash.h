// Hashes for change detection: Fnv1aHex over any text, and RolloutHash over what a rollout
// carries out, which the state machine keeps in status.rolloutHash to see that the user
// changed it. Not for security. Includes only types.h and Abseil; hash.cc also uses
// tuning.h (the canonical tuning is part of the hash).
//
//   if (RolloutHash(spec) != status.rollout_hash) Restart();
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_HASH_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_HASH_H_

#include <string>

#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// A short hash of everything that defines what a rollout carries out (tuning, steps,
// containers). Changing any of them restarts the rollout; pausing or changing durations
// does not.
std::string RolloutHash(const ProfileSpec& spec);

// A short hash of what defines a step's experiment without changing the tuning: the
// agents' window and where they read the app's metrics (analysis.interval, .source, both
// arms' templates carry them), what the canary is compared with (analysis.mode,
// .baseline). Changing any of them mid-rollout restarts the current step on both arms;
// the judge's thresholds and durations are not part of it.
std::string ExperimentHash(const ProfileSpec& spec);

// FNV-1a 64 over `text`, as 16 hex digits. Change detection only, not security.
std::string Fnv1aHex(absl::string_view text);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_HASH_H_
