#include "sidecar/sample/preload_presence.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

bool ParseHex32(absl::string_view s, uint32_t* out) {
  return absl::SimpleHexAtoi(s, out);
}

}  // namespace

PresenceByPid ParsePreloadPresence(absl::string_view proc_locks, const FileId& file) {
  PresenceByPid out;
  for (absl::string_view line : absl::StrSplit(proc_locks, '\n', absl::SkipEmpty())) {
    // "1: POSIX  ADVISORY  READ 1234 08:01:5678 0 0"
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.size() < 8 || f[1] == "->" || f[1] != "POSIX" || f[3] != "READ") continue;
    pid_t pid = 0;
    if (!absl::SimpleAtoi(f[4], &pid) || pid <= 0) continue;
    std::vector<absl::string_view> id = absl::StrSplit(f[5], ':');
    FileId got;
    if (id.size() != 3 || !ParseHex32(id[0], &got.major) || !ParseHex32(id[1], &got.minor) ||
        !absl::SimpleAtoi(id[2], &got.inode)) {
      continue;
    }
    if (got.major != file.major || got.minor != file.minor || got.inode != file.inode) continue;
    int64_t start = 0;
    int64_t end = 0;
    if (!absl::SimpleAtoi(f[6], &start)) continue;
    if (f[7] == "EOF") {
      end = INT64_MAX;
    } else if (!absl::SimpleAtoi(f[7], &end)) {
      continue;
    }
    PreloadPresence& p = out[pid];
    if (start <= kPresenceLoadedByte && kPresenceLoadedByte <= end) p.loaded = true;
    if (start <= kPresenceGoByte && kPresenceGoByte <= end) p.go = true;
  }
  return out;
}

absl::StatusOr<PresenceByPid> ReadPreloadPresence(const std::string& library,
                                                  const std::string& proc_root) {
  struct stat st {};
  if (stat(library.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(library, ": no such file"));
  }
  absl::StatusOr<std::string> locks = ReadFile(proc_root + "/locks");
  if (!locks.ok()) return locks.status();
  return ParsePreloadPresence(
      *locks, FileId{major(st.st_dev), minor(st.st_dev), static_cast<uint64_t>(st.st_ino)});
}

}  // namespace booster::agent
