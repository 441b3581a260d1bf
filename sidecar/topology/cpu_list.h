// CPU and NUMA-node lists in the kernel's text form ("0-3,8,10-11"), as found in
// cpuset.cpus, /sys/devices/system/node/*/cpulist and taskset. Pure functions.
//
//   absl::StatusOr<std::vector<int>> cpus = ParseCpuList("0-3,8");   // {0,1,2,3,8}
//   FormatCpuList({0, 1, 2, 5});                                     // "0-2,5"
#ifndef BOOSTER_SIDECAR_TOPOLOGY_CPU_LIST_H_
#define BOOSTER_SIDECAR_TOPOLOGY_CPU_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

// Parses a list such as "0-3,8,10-11" (whitespace and a trailing newline allowed, empty
// means the empty set). Returns the sorted, de-duplicated numbers.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// Formats numbers (any order, duplicates allowed) as a compact sorted range list.
std::string FormatCpuList(std::vector<int> cpus);

// Sorted intersection of two sorted lists.
std::vector<int> IntersectSorted(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_TOPOLOGY_CPU_LIST_H_
