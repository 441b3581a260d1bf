// Which processes of the pod have libbooster.so loaded, and which of those are Go
// programs, as the kernel's lock table says: at load, libbooster.so takes POSIX read locks
// on its own file (byte 0: loaded; byte 1: the program is Go, whose sockets and clocks
// bypass libc), and keeps them for the life of the process (again in each forked child).
// /proc/locks shows every lock with its owner's pid in the reader's pid namespace, to any
// user, so the agent learns what the library reaches without reading other processes'
// memory maps (which needs their user or CAP_SYS_PTRACE).
//
//   absl::StatusOr<PresenceByPid> p = ReadPreloadPresence("/booster/libbooster.so");
//   // (*p)[1234].loaded, (*p)[1234].go
#ifndef BOOSTER_SIDECAR_SAMPLE_PRELOAD_PRESENCE_H_
#define BOOSTER_SIDECAR_SAMPLE_PRELOAD_PRESENCE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::agent {

// The byte offsets libbooster.so locks (runtime/interpose.cc, AnnouncePresence).
inline constexpr int64_t kPresenceLoadedByte = 0;
inline constexpr int64_t kPresenceGoByte = 1;

struct PreloadPresence {
  bool loaded = false;
  bool go = false;
};
using PresenceByPid = std::map<pid_t, PreloadPresence>;

// The file a lock is on, as /proc/locks names it: MAJOR:MINOR:INODE.
struct FileId {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint64_t inode = 0;
};

// Pure: the POSIX locks on `file` in `proc_locks` (the text of /proc/locks). Lines that do
// not parse, other files, other lock kinds and blocked waiters ("->") are ignored.
PresenceByPid ParsePreloadPresence(absl::string_view proc_locks, const FileId& file);

// stat(library) and <proc_root>/locks. kNotFound when the library file does not exist.
absl::StatusOr<PresenceByPid> ReadPreloadPresence(const std::string& library,
                                                  const std::string& proc_root = "/proc");

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_PRELOAD_PRESENCE_H_
