// The JSON spelling of the profile's enums (names.h).
#include "operator/rollout/profile/names.h"

namespace booster::rollout {

absl::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending:
      return "Pending";
    case Phase::kEnrolling:
      return "Enrolling";
    case Phase::kProgressing:
      return "Progressing";
    case Phase::kPaused:
      return "Paused";
    case Phase::kPromoting:
      return "Promoting";
    case Phase::kPromoted:
      return "Promoted";
    case Phase::kRollingBack:
      return "RollingBack";
    case Phase::kRolledBack:
      return "RolledBack";
    case Phase::kFailed:
      return "Failed";
  }
  return "Pending";
}

std::optional<Phase> ParsePhase(absl::string_view name) {
  for (Phase p :
       {Phase::kPending, Phase::kEnrolling, Phase::kProgressing, Phase::kPaused, Phase::kPromoting,
        Phase::kPromoted, Phase::kRollingBack, Phase::kRolledBack, Phase::kFailed}) {
    if (PhaseName(p) == name) return p;
  }
  return std::nullopt;
}

absl::string_view AllocatorName(Allocator a) {
  switch (a) {
    case Allocator::kDefault:
      return "default";
    case Allocator::kJemalloc:
      return "jemalloc";
    case Allocator::kMimalloc:
      return "mimalloc";
    case Allocator::kTcmalloc:
      return "tcmalloc";
  }
  return "default";
}

absl::string_view PlacementName(CpuPlacement p) {
  switch (p) {
    case CpuPlacement::kNone:
      return "none";
    case CpuPlacement::kSpread:
      return "spread";
    case CpuPlacement::kWholeCores:
      return "whole-cores";
    case CpuPlacement::kPinned:
      return "pinned";
  }
  return "none";
}

absl::string_view NumaName(NumaPolicy n) {
  switch (n) {
    case NumaPolicy::kNone:
      return "none";
    case NumaPolicy::kPreferred:
      return "preferred";
    case NumaPolicy::kAlign:
      return "align";
    case NumaPolicy::kBind:
      return "bind";
  }
  return "none";
}

}  // namespace booster::rollout
