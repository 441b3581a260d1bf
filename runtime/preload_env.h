// runtime/preload_env.h: composes the LD_PRELOAD value that loads an allocator
// (jemalloc, mimalloc or tcmalloc from Debian) and libbooster.so into a program, in the
// order the dynamic loader needs. Shared by the booster-preload CLI and the agent.
//
//   PreloadRequest request{.allocator = Allocator::kJemalloc,
//                          .runtime_lib = "/booster/libbooster.so",
//                          .existing = getenv("LD_PRELOAD") ?: ""};
//   absl::StatusOr<std::string> value = ComposeLdPreload(request);
//   // "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2:/booster/libbooster.so"
//
// Order: sanitizer runtimes already in LD_PRELOAD stay first (they must initialise before
// anything else), then the allocator (its malloc must be the first one found), then
// libbooster.so, then whatever else was there. Duplicates are dropped.
#ifndef BOOSTER_RUNTIME_PRELOAD_ENV_H_
#define BOOSTER_RUNTIME_PRELOAD_ENV_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::runtime {

enum class Allocator { kGlibc, kJemalloc, kMimalloc, kTcmalloc };

// "glibc" (also "system", "none", ""), "jemalloc", "mimalloc", "tcmalloc".
absl::StatusOr<Allocator> ParseAllocator(absl::string_view name);
absl::string_view AllocatorName(Allocator allocator);

// File names tried for an allocator, best first, and the Debian package providing it.
std::vector<std::string> AllocatorLibraryNames(Allocator allocator);
absl::string_view AllocatorPackage(Allocator allocator);

struct PreloadRequest {
  Allocator allocator = Allocator::kGlibc;
  // Absolute path of a specific allocator library; overrides the search.
  std::string allocator_lib;
  // Absolute path of libbooster.so; empty: the allocator only.
  std::string runtime_lib;
  // The current LD_PRELOAD (colon- or space-separated).
  std::string existing;
  // Directories searched for the allocator; empty: DefaultLibraryDirs().
  std::vector<std::string> library_dirs;
};

// The system library directories, multiarch first.
std::vector<std::string> DefaultLibraryDirs();

using FileExists = std::function<bool(const std::string& path)>;

// The pure core: `exists` answers for the file system. Errors:
//   kNotFound         the allocator (or runtime_lib) is not installed; the message names
//                     the directories searched and the Debian package to install;
//   kInvalidArgument  a relative path, or LD_PRELOAD already holds a different allocator.
absl::StatusOr<std::string> ComposeLdPreload(const PreloadRequest& request,
                                             const FileExists& exists);

// The same against the real file system.
absl::StatusOr<std::string> ComposeLdPreload(const PreloadRequest& request);

}  // namespace booster::runtime

#endif  // BOOSTER_RUNTIME_PRELOAD_ENV_H_
