// The Go version an executable was built with and its default GODEBUG, read from the build
// info the Go linker writes into every Go binary (Go's debug/buildinfo; what
// `go version -m <file>` prints), so the agent can tell the operator which Go runtime the
// application runs, and with which defaults, without running anything in its container.
//
//   std::optional<GoBuildInfo> b = ReadGoBuildInfo("/proc/4242/exe");
//   b->version;          // "go1.26.0"
//   b->default_godebug;  // "containermaxprocs=0,..." for a go.mod older than go 1.25
//
// The format (Go 1.18 and later): a 32-byte header at a 16-byte aligned offset of the
// .go.buildinfo section, at the start of the data segment — the 14-byte magic
// "\xff Go buildinf:", the pointer size, a flags byte — and, when flags & 0x2 (the version
// is inline), two uvarint-length-prefixed strings after the header: the Go version, then
// the module info (lines such as "build\tDefaultGODEBUG=...", between two 16-byte
// sentinels). Binaries of Go before 1.18 keep pointers to the strings instead; they are not
// decoded here and read as "not a Go program" (nullopt).
#ifndef BOOSTER_SIDECAR_SAMPLE_GO_BUILD_INFO_H_
#define BOOSTER_SIDECAR_SAMPLE_GO_BUILD_INFO_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace booster::agent {

// How much of an executable ReadGoBuildInfo scans at most. Go's linker puts the build info
// at the start of the data segment, after the code and read-only data: 14 MB into the
// 15 MB `go` command. An executable larger than this whose build info lies further is read
// as not a Go program.
inline constexpr size_t kGoBuildInfoScanLimit = size_t{64} << 20;

struct GoBuildInfo {
  std::string version;  // "go1.26.0": starts with "go", at most 128 printable ASCII characters
  // The module info's "build\tDefaultGODEBUG=" setting, the GODEBUG defaults the main
  // module's go.mod implies; "" when there is none, or it is quoted, not printable ASCII,
  // longer than 4096 characters, or the module info does not lie within the bytes read.
  std::string default_godebug;
};

// The build info in `bytes`, a whole executable or a prefix of it: the first header at a
// 16-byte aligned offset (relative to the start of `bytes`) with the magic, the inline flag
// and a valid version that lies within `bytes`. A match that fails any of these (the magic
// as data, a truncated header, a bad varint) is skipped and the scan goes on. nullopt when
// none is valid: not a Go program, a Go before 1.18, or a prefix that ends too soon. Pure.
std::optional<GoBuildInfo> GoBuildInfoFromBinary(absl::string_view bytes);
// Its version only.
std::optional<std::string> GoVersionFromBinary(absl::string_view bytes);

// GoBuildInfoFromBinary over the file at `exe_path` (e.g. /proc/<pid>/exe), read in 1 MiB
// chunks up to kGoBuildInfoScanLimit, never loaded whole; once a header is found, up to
// 1 MiB from it is read for the module info. nullopt when the file is not a Go program, and
// when it cannot be read; then, when `error` is given, *error says why
// ("open /proc/42/exe: Permission denied"), and is "" otherwise.
std::optional<GoBuildInfo> ReadGoBuildInfo(const std::string& exe_path,
                                           std::string* error = nullptr);
// Its version only.
std::optional<std::string> ReadGoVersion(const std::string& exe_path, std::string* error = nullptr);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_GO_BUILD_INFO_H_
