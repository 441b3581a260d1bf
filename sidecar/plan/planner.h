// The placement planner: a pure function from (topology, limits, policy) to a plan —
// which CPUs a container's threads run on, which NUMA nodes its memory lives on, and the
// runtime settings that follow from the placement actually granted (GOMAXPROCS,
// GOMEMLIMIT, MALLOC_ARENA_MAX, libbooster.so's CPU order). No I/O; see docs/agent.md
// for the reasoning behind each rule.
//
//   absl::StatusOr<Plan> plan = PlanPlacement(topology, limits, PlacementPolicy{});
//   // plan->cpus == {0, 1}, plan->gomaxprocs == 1 for a 1.5-core quota ...
#ifndef BOOSTER_SIDECAR_PLAN_PLANNER_H_
#define BOOSTER_SIDECAR_PLAN_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sidecar/topology/cgroup.h"
#include "sidecar/topology/topology.h"

namespace booster::agent {

struct PlacementPolicy {
  // Span NUMA nodes when the CPUs wanted do not fit in one. Off: the plan is capped at
  // the CPUs of the best single node.
  bool allow_cross_numa = false;
  // Fraction of the memory limit given to GOMEMLIMIT (the rest is headroom for non-heap
  // memory: goroutine stacks, cgo, the agent's own page cache pressure); rounded to a
  // whole percent, the unit of the profile's `gomemlimit: "85%"`.
  double gomemlimit_fraction = 0.9;
  // CPUs wanted when there is no quota; 0 means all allowed CPUs.
  int max_cpus = 0;
  // Take every hardware thread of a core before the next core (placement whole-cores:
  // the fewest physical cores). Off: one thread per core first, siblings last (spread).
  bool pack_cores = false;
};

struct Plan {
  std::vector<int> cpus;           // sorted OS CPU numbers
  std::vector<int> cpu_order;      // the same CPUs in the order threads get them
  std::vector<int> memory_nodes;   // sorted OS NUMA node numbers; empty: no binding
  int whole_cores = 0;             // cores contributing at least one CPU
  bool smt_siblings_used = false;  // some core contributes two or more threads
  bool cross_numa = false;
  int cpus_wanted = 0;  // from the quota (ceil) or all allowed CPUs
  int gomaxprocs = 0;
  uint64_t gomemlimit_bytes = 0;  // 0: no memory limit, leave GOMEMLIMIT unset
  int malloc_arena_max = 0;
  std::vector<std::string> notes;  // why, in words a user can read
};

// Errors: kInvalidArgument when the limits leave no CPU of the topology, or the policy
// is out of range.
absl::StatusOr<Plan> PlanPlacement(const Topology& topology, const Limits& limits,
                                   const PlacementPolicy& policy);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_PLAN_PLANNER_H_
