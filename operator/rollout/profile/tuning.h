// spec.tuning: how it is read and validated, and its canonical JSON. The canonical JSON
// (defaults filled in, keys sorted) is what the canary runs, the agent's BOOSTER_TUNING,
// status.baselineTuning, and the input of RolloutHash (hash.h). Includes only types.h and
// Abseil; tuning.cc also uses names.h, sysctl.h and the readers of this folder.
//
//   std::string env = TuningToJson(spec.tuning).dump();
//   absl::StatusOr<Tuning> back = TuningFromJson(Json::parse(env));   // the same tuning
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_TUNING_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_TUNING_H_

#include "absl/status/statusor.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// Canonical JSON of the tuning (defaults filled in, keys sorted): what the canary runs,
// the agent's BOOSTER_TUNING, and the input of RolloutHash.
Json TuningToJson(const Tuning& tuning);
// The tuning of a spec.tuning object (TuningToJson's output included), validated as
// ParseSpec validates it.
absl::StatusOr<Tuning> TuningFromJson(const Json& tuning);

namespace profile_internal {

class SpecErrors;

// Reads and validates spec.tuning into `out`, reporting every problem to `errors`: the
// part of ParseSpec (spec.cc) that TuningFromJson shares.
void ParseTuning(const Json& j, Tuning& out, SpecErrors& errors);

}  // namespace profile_internal
}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_TUNING_H_
