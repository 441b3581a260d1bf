// The Go runtime's two resource knobs, computed from a container's limits by one rule
// that the operator (pod_template.cc, the GOMAXPROCS / GOMEMLIMIT it puts in the pod's
// environment) and the agent (planner.cc, the plan it reports) both use. Pure.
//
//   GoMaxProcsFor(500, 2)            == 1   // 500m on a 2-CPU node: one P, not Go's 2
//   GoMaxProcsFor(std::nullopt, 2)   == 2   // no limit: the CPUs granted
//   GoMemLimitBytes(64 << 20, GoMemLimitPercent("auto").value()) == 60397977
//
// GOMAXPROCS is the whole cores of the CPU limit, rounded down, at least 1, never above
// the CPUs granted: Go's parallel demand then stays within the CFS quota, so the
// container is not throttled for the rest of each 100 ms period (throttling is what
// inflates tail latency). Rounding up (Go 1.25's own default, min 2) lets 1500m run 2 Ps
// that can use 200 ms of CPU per 100 ms period against a 150 ms quota. docs/crd.md.
#ifndef BOOSTER_COMMON_GO_RUNTIME_H_
#define BOOSTER_COMMON_GO_RUNTIME_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace booster {

// GOMAXPROCS from the CPU limit in millicores (nullopt or <= 0: no limit) and the CPUs
// the process may run on (nullopt: not known). With a limit: floor(millis / 1000), at
// least 1, at most the CPUs granted when known. Without one: the CPUs granted, or
// nullopt when they are not known either (leave GOMAXPROCS unset: Go counts them itself).
std::optional<int> GoMaxProcsFor(std::optional<int64_t> cpu_limit_millis,
                                 std::optional<int> cpus_granted);

// The share of the memory limit given to GOMEMLIMIT for "auto".
inline constexpr int kGoMemLimitAutoPercent = 90;

// The percentage a GOMEMLIMIT spec asks for: "auto" -> 90, "85%" -> 85 (1..100); nullopt
// for anything else (a size such as "768MiB" is passed to Go as written).
std::optional<int> GoMemLimitPercent(std::string_view spec);

// floor(limit x percent / 100), exact in integers; nullopt without a positive limit or
// with a percentage outside 1..100 (leave GOMEMLIMIT unset).
std::optional<int64_t> GoMemLimitBytes(std::optional<int64_t> memory_limit_bytes, int percent);

}  // namespace booster

#endif  // BOOSTER_COMMON_GO_RUNTIME_H_
