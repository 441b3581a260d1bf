// spec.search: the tuning search's candidates, objective and trial budget, read and
// validated against the profile's own tuning (every candidate must make a valid tuning),
// and the JSON pointer each knob names in TuningToJson's object. The search itself runs in
// operator/search. Includes only types.h; search_spec.cc also uses tuning.h, metric_names.h
// and the readers of this folder.
//
//   knobs:                                   SearchKnob{.knob = "runtime.go.gogc",
//   - knob: runtime.go.gogc                             .path = "/runtime/go/gogc",
//     values: [200, 400]                                .values = {"200", "400"}}
//   - sysctl: net.core.somaxconn             SearchKnob{.knob = "sysctl net.core.somaxconn",
//     values: [4096]                                    .path = "/sysctls/net.core.somaxconn"}
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_SEARCH_SPEC_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_SEARCH_SPEC_H_

#include <string>

#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// The knobs `knob:` may name, in the spec's spelling ("runtime.go.gogc"); sysctls are named
// with `sysctl:` instead.
inline constexpr absl::string_view kSearchKnobs[] = {
    "cpu.placement",
    "cpu.numa",
    "runtime.go.gomaxprocs",
    "runtime.go.gomemlimit",
    "runtime.go.gogc",
    "runtime.preload.listenBacklog",
    "runtime.preload.tcpNoDelay",
    "runtime.preload.tcpQuickAck",
    "runtime.preload.busyPollMicros",
    "runtime.preload.receiveBufferBytes",
    "runtime.preload.sendBufferBytes",
    "runtime.preload.coarseClocks",
    "runtime.preload.allocator",
};

// How a knob's JSON pointer reads to a person: "/runtime/go/gogc" -> "runtime.go.gogc",
// "/sysctls/net.core.somaxconn" -> "sysctl net.core.somaxconn".
std::string SearchKnobName(const std::string& path);

namespace profile_internal {

class SpecErrors;

// Reads spec.search into `out`. `tuning` is the profile's spec.tuning, already read: each
// candidate value is checked by setting it there (TuningFromJson must accept the result),
// and a GOGC of off needs a GOMEMLIMIT in the tuning. `analysis` must be mode Metrics and
// not a dry run (a search keeps only what the judge showed better).
void ParseSearch(const Json& j, const Tuning& tuning, const AnalysisSpec& analysis,
                 SearchSpec& out, SpecErrors& errors);

}  // namespace profile_internal
}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_SEARCH_SPEC_H_
