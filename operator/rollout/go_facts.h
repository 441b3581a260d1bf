// Whether a GOMAXPROCS that a tuning sets changes anything for the Go program a container
// runs: Go 1.25 and later set GOMAXPROCS from the container's CPU limit themselves (the
// limit rounded up, at least 2, at most the CPUs the process may use), so `gomaxprocs:
// auto` (the whole cores of the limit) is what the program already runs with for whole
// limits of 2 cores and more, and `gomaxprocs: 2` under a 1-CPU limit on a 2-CPU node is
// too. The agents read the program's Go version and default GODEBUG from its build info
// and the CPUs it may use (feedback WindowReport: go_version, app_cpus,
// go_default_godebug); these functions compare what the two templates make Go run with.
// Pure.
//
//   GoFacts go{.version = "go1.26.0", .cpus = 2};
//   GoDefaultMaxProcs(container_with_limit_1500m, go) == 2
//   std::string why = GoMaxProcsNoOp(baseline_template, canary_template, {}, go);
//   // "GOMAXPROCS 2 in container app is what go1.26.0 already runs with there ..."
#ifndef BOOSTER_OPERATOR_ROLLOUT_GO_FACTS_H_
#define BOOSTER_OPERATOR_ROLLOUT_GO_FACTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// What the agents read about the program of a profile's pods.
struct GoFacts {
  std::string version;          // "go1.26.0"; "" = not a Go program, or not known
  int cpus = 0;                 // CPUs the program may run on (its affinity); 0 = unknown
  std::string default_godebug;  // the binary's DefaultGODEBUG, "" = none
  bool operator==(const GoFacts&) const = default;
};

// What tells one program of a pod template from another: the images of its containers
// (Booster's own left out), "name=image" joined by ",". Go facts read from the pods of one
// template hold for another with the same key.
std::string ProgramKey(const Json& pod_template);

// The minor version of a Go release: 26 for "go1.26.0" and "go1.26rc1"; nullopt for
// anything else ("devel ...", "").
std::optional<int> GoMinorVersion(absl::string_view version);

// The GOMAXPROCS Go picks itself in `container` (a pod template container) when the
// environment does not set it: the CPUs it may use, lowered to the CPU limit rounded up
// (at least 2) for Go 1.25+ unless GODEBUG containermaxprocs=0 (the container's GODEBUG
// over the binary's default). nullopt when not known (no facts, an unknown version, no CPU
// count, a GODEBUG from valueFrom).
std::optional<int> GoDefaultMaxProcs(const Json& container, const GoFacts& facts);

// The GOMAXPROCS the Go program in `container` runs with: the environment's GOMAXPROCS
// when it is a positive number, else GoDefaultMaxProcs. nullopt when not known
// (valueFrom, a value Go would not take, no facts).
std::optional<int> GoMaxProcsIn(const Json& container, const GoFacts& facts);

// Why `tuned` (a pod template) changes nothing in GOMAXPROCS against `base`: every app
// container of `tuned` (those named in `containers`, or all but Booster's own when empty)
// runs its Go program with the same GOMAXPROCS as the same container of `base`, and at
// least one of them has its GOMAXPROCS set differently in the two templates. "" when it
// changes something or that cannot be told.
std::string GoMaxProcsNoOp(const Json& base, const Json& tuned,
                           const std::vector<std::string>& containers, const GoFacts& facts);

// GoMaxProcsNoOp for two tunings of the same target: the templates TunedTemplate makes of
// the team's template under `target_template` with `before` and with `after`.
std::string TuningGoMaxProcsNoOp(const Json& target_template, const Tuning& before,
                                 const Tuning& after, const EnrollContext& ctx,
                                 const MutationOptions& opts, const GoFacts& facts);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_GO_FACTS_H_
