#include "operator/feedback/types.h"

namespace booster::feedback {

absl::string_view ArmName(Arm arm) {
  switch (arm) {
    case Arm::kBaseline:
      return "baseline";
    case Arm::kCanary:
      return "canary";
  }
  return "unknown";
}

std::optional<Arm> ParseArm(absl::string_view name) {
  if (name == "baseline") return Arm::kBaseline;
  if (name == "canary") return Arm::kCanary;
  return std::nullopt;
}

absl::string_view KnobOutcomeName(KnobOutcome outcome) {
  switch (outcome) {
    case KnobOutcome::kUnspecified:
      return "unspecified";
    case KnobOutcome::kApplied:
      return "applied";
    case KnobOutcome::kFailed:
      return "failed";
    case KnobOutcome::kNotReachable:
      return "not_reachable";
  }
  return "unspecified";
}

}  // namespace booster::feedback
