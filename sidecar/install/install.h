// `booster-agent install <dir>`: the init-container mode. Copies libbooster.so and, when
// asked, an allocator library into the pod's shared volume, where the app container's
// LD_PRELOAD finds them. Each file is written to a temporary name and renamed, so an app
// container never maps a half-written library.
//
//   InstallOptions o{.dir = "/booster", .library = "/usr/lib/booster/libbooster.so",
//                    .allocator = "jemalloc"};
//   absl::StatusOr<std::vector<std::string>> files = InstallRuntime(o);
#ifndef BOOSTER_SIDECAR_INSTALL_INSTALL_H_
#define BOOSTER_SIDECAR_INSTALL_INSTALL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace booster::agent {

struct InstallOptions {
  std::string dir;
  std::string library;             // path of libbooster.so to copy
  std::string allocator = "none";  // none, jemalloc, mimalloc, tcmalloc, or a path
  std::string allocator_dir = "/usr/lib/x86_64-linux-gnu";
};

// Where `install` finds libbooster.so when neither --lib nor $BOOSTER_LIB says: beside the
// agent executable `exe` (the agent image ships both in one directory). Pure.
std::string LibraryBesideExecutable(const std::string& exe);

// The allocator's shared object in `allocator_dir`, or kInvalidArgument for an unknown
// name. Pure.
absl::StatusOr<std::string> AllocatorPath(const std::string& name, const std::string& dir);

// Returns the installed paths: <dir>/libbooster.so and <dir>/<allocator file name>.
absl::StatusOr<std::vector<std::string>> InstallRuntime(const InstallOptions& options);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_INSTALL_INSTALL_H_
