// The names of a BoosterProfile on the API server: its group, kind and finalizer, the
// annotations that drive a rollout by hand, and the spelling of its enums in JSON (phase,
// allocator, CPU placement, NUMA policy). Includes only types.h and Abseil.
//
//   j["phase"] = std::string(PhaseName(status.phase));
//   Phase p = ParsePhase(j["phase"]).value_or(Phase::kPending);
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_NAMES_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_NAMES_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

inline constexpr char kGroup[] = "booster.dev";
inline constexpr char kApiVersion[] = "booster.dev/v1alpha1";
inline constexpr char kKind[] = "BoosterProfile";
inline constexpr char kFinalizer[] = "booster.dev/finalizer";

// Annotations on the profile that drive a rollout by hand (kubectl annotate). The one-shot
// ones act once per distinct value; the value acted on is kept in status.handled.
inline constexpr char kAnnotationPaused[] = "booster.dev/paused";           // "true"
inline constexpr char kAnnotationPromoteNow[] = "booster.dev/promote-now";  // any token
inline constexpr char kAnnotationAbort[] = "booster.dev/abort";             // any token
inline constexpr char kAnnotationRetry[] = "booster.dev/retry";             // any token

// status.phase as the CRD's enum spells it; ParsePhase is exact (nullopt otherwise).
absl::string_view PhaseName(Phase phase);
std::optional<Phase> ParsePhase(absl::string_view name);
// The values of spec.tuning as the CRD spells them.
absl::string_view AllocatorName(Allocator a);
absl::string_view PlacementName(CpuPlacement p);
absl::string_view NumaName(NumaPolicy n);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_NAMES_H_
