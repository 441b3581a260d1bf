// Parsing a BoosterProfile: the whole object from the API server (ParseProfile) and its
// .spec (ParseSpec), validated with the CRD's rules plus the semantic ones the schema cannot
// express (the sysctl allowlist, durations, knobs that depend on each other). Errors carry
// the field path and what to do about it, because they end up verbatim in the InvalidSpec
// condition. Includes only types.h and Abseil; spec.cc also uses the other files of this
// folder (names, metric names, tuning, status codec, readers).
//
//   absl::StatusOr<Profile> p = ParseProfile(object_json);
//   if (!p->spec.ok()) SetInvalidSpec(p->spec.status().message());
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// Parses a whole BoosterProfile object. Fails only when the object is not a
// BoosterProfile at all (wrong kind, no metadata.name); a bad spec is reported in
// Profile::spec and a malformed status is read leniently (unknown values -> defaults).
absl::StatusOr<Profile> ParseProfile(const Json& object);

// Parses and validates .spec: schema rules and semantic rules. All problems are reported
// at once, separated by "; ", each prefixed by its field path.
absl::StatusOr<ProfileSpec> ParseSpec(const Json& spec);

// What mode Metrics (the default) judges when spec.rollout.analysis lists no metrics: what
// an agent can measure in any pod. The application's figures are optional (a pod whose app
// exposes no latency histogram or request counter skips them, docs/agent.md), the kernel's
// listen overflows are always there:
//   latencyP99 10%, throughput 10%, errorRate 20%, cpuThrottling 100% (all optional),
//   listenOverflows 0% (required).
std::vector<MetricSpec> DefaultMetrics();

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_H_
