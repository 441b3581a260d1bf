// CPU and NUMA-node lists in the kernel's text form ("0-3,8,10-11"), as found in
// cpuset.cpus, /sys/devices/system/node/*/cpulist and taskset, read and written by hwloc's
// bitmap list functions (hwloc_bitmap_list_sscanf, hwloc_bitmap_list_asprintf) for the
// callers that hold CPU numbers as sorted vectors.
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

// The highest CPU or node number a list may name; a larger one is a malformed list
// ("0-2000000000" would otherwise ask for a 250 MB bitmap).
inline constexpr int kMaxCpuNumber = 1 << 16;

// Parses a list such as "0-3,8,10-11" (whitespace around items and a trailing newline
// allowed, empty means the empty set). Returns the sorted, de-duplicated numbers.
// kInvalidArgument for anything else: "a", "1-", "-1", "3-1", "1,,2", "1.5", a number above
// kMaxCpuNumber.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// Formats numbers (any order, duplicates allowed, each in [0, kMaxCpuNumber]) as a compact
// sorted range list; numbers outside that range are left out.
std::string FormatCpuList(const std::vector<int>& cpus);

// Sorted intersection of two sorted lists.
std::vector<int> IntersectSorted(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_TOPOLOGY_CPU_LIST_H_
