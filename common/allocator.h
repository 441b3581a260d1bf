// The allocator libraries Booster can chain in front of libbooster.so with LD_PRELOAD,
// by the name the CRD uses (tuning.runtime.preload.allocator): the file name of each, as
// Debian installs it and as the install init container copies it into the pod's shared
// volume. One table for the operator (which writes LD_PRELOAD) and the agent's `install`
// (which copies the file), so the two can never name different files.
//
//   AllocatorFileName("jemalloc") == "libjemalloc.so.2"; AllocatorFileName("glibc") == ""
#ifndef BOOSTER_COMMON_ALLOCATOR_H_
#define BOOSTER_COMMON_ALLOCATOR_H_

#include "absl/strings/string_view.h"

namespace booster {

// "" for a name that is not a known allocator (including "default" and "none").
inline absl::string_view AllocatorFileName(absl::string_view name) {
  if (name == "jemalloc") return "libjemalloc.so.2";
  if (name == "mimalloc") return "libmimalloc.so.2";
  if (name == "tcmalloc") return "libtcmalloc_minimal.so.4";
  return "";
}

}  // namespace booster

#endif  // BOOSTER_COMMON_ALLOCATOR_H_
