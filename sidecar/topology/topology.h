// The machine as the agent plans on it: cores with their hardware threads (OS CPU
// numbers), NUMA nodes with their distances, caches. Filled from hwloc (topology.cc; the
// only other code using hwloc is cpu_list.cc, for its bitmaps) either from this machine or
// from a synthetic description, and restricted to the CPUs a container may use.
//
//   absl::StatusOr<Topology> t = LoadSyntheticTopology("package:2 numa:2 core:8 pu:2");
//   Topology mine = RestrictTopology(*t, /*allowed_cpus=*/{0, 1, 2, 3});
#ifndef BOOSTER_SIDECAR_TOPOLOGY_TOPOLOGY_H_
#define BOOSTER_SIDECAR_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

struct Core {
  int index = 0;          // hwloc logical index of the core, machine-wide
  int package = 0;        // logical index of its package (socket)
  int numa_node = 0;      // OS index of the NUMA node it belongs to
  std::vector<int> cpus;  // OS CPU numbers of its hardware threads, sibling order
  int threads_total = 0;  // hardware threads the core has, allowed or not
};

struct NumaNode {
  int os_index = 0;
  uint64_t memory_bytes = 0;
  std::vector<int> cpus;  // sorted OS CPU numbers
};

struct Cache {
  int level = 0;     // 1, 2, 3...
  std::string type;  // "data", "instruction", "unified"
  uint64_t size_bytes = 0;
  int line_bytes = 0;
  std::vector<int> cpus;  // sorted OS CPU numbers sharing this cache
};

struct Topology {
  std::vector<Core> cores;           // in hwloc logical order
  std::vector<NumaNode> numa_nodes;  // in OS index order
  // distances[i][j] between numa_nodes[i] and numa_nodes[j] (ACPI SLIT style: 10 local).
  std::vector<std::vector<uint64_t>> distances;
  bool distances_measured = false;  // false: filled with 10 local / 20 remote
  std::vector<Cache> caches;
  int packages = 0;
  std::string source;  // "this machine" or "synthetic: <description>"

  // All OS CPU numbers, sorted.
  std::vector<int> Cpus() const;
  int NumaIndex(int os_index) const;  // position in numa_nodes, -1 when absent
};

// The topology of the machine this process runs on, including CPUs outside its own
// affinity (restrict afterwards with RestrictTopology).
absl::StatusOr<Topology> LoadHostTopology();

// A topology from an hwloc synthetic description, e.g. "package:2 numa:2 core:8 pu:2".
absl::StatusOr<Topology> LoadSyntheticTopology(absl::string_view description);

// Keeps only `allowed_cpus` (sorted OS numbers): cores lose the other threads and vanish
// when none is left; NUMA nodes and caches keep only the allowed CPUs. An empty
// `allowed_cpus` means no restriction. Pure.
Topology RestrictTopology(const Topology& topology, const std::vector<int>& allowed_cpus);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_TOPOLOGY_TOPOLOGY_H_
