// Small file helpers for the agent's thin I/O shells: whole-file reads of /proc and
// cgroup files (which report a size of 0, so no stat-based sizing), and durable writes.
#ifndef BOOSTER_SIDECAR_BASE_FILE_UTIL_H_
#define BOOSTER_SIDECAR_BASE_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"

namespace booster::agent {

// Reads a whole file. kNotFound when it does not exist (a process that exited).
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` at offset 0 of an existing file without truncating first, the way
// sysctl and cgroup files must be written (one write(2)).
absl::Status WriteExisting(const std::string& path, const std::string& contents);

// Writes a whole file durably: temp file in the same directory, fsync, rename, fsync dir.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents,
                                 int mode = 0644);

// An errno turned into a Status whose code says what the caller should do.
absl::Status ErrnoStatus(int err, const std::string& what);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_BASE_FILE_UTIL_H_
