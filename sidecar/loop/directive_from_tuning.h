// The pod's own tuning (BOOSTER_TUNING, the profile's spec.tuning as the operator wrote
// it into the agent's environment) as the directive the agent applies once the
// application is up. Only the parts the agent applies live are taken: cpu.placement and
// cpu.numa, and — because a published control page replaces libbooster.so's environment
// knobs — every runtime.preload knob the page carries. Sysctls, Go knobs and the
// allocator are the pod spec's (kubelet, environment, LD_PRELOAD) and are left out.
//
//   absl::StatusOr<std::optional<Directive>> d = DirectiveFromTuning(json, "canary");
//   // nullopt: the tuning asks for no placement, no NUMA policy and no library knob
#ifndef BOOSTER_SIDECAR_LOOP_DIRECTIVE_FROM_TUNING_H_
#define BOOSTER_SIDECAR_LOOP_DIRECTIVE_FROM_TUNING_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/loop/directive.h"

namespace booster::agent {

// Generation 0, action apply, the given arm. The keys, in order: placement, numa,
// runtime.thread_placement (pinned -> pin, spread / whole-cores -> confine),
// runtime.numa_mempolicy (preferred / align -> preferred, bind -> bind), then the preload
// knobs. kInvalidArgument for text that is not the operator's tuning JSON.
absl::StatusOr<std::optional<Directive>> DirectiveFromTuning(absl::string_view tuning_json,
                                                             const std::string& arm);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_LOOP_DIRECTIVE_FROM_TUNING_H_
