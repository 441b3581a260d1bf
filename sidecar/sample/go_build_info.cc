#include "sidecar/sample/go_build_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

constexpr absl::string_view kMagic("\xff Go buildinf:", 14);
constexpr size_t kHeaderSize = 32;
constexpr size_t kAlign = 16;
constexpr size_t kFlagsOffset = 15;
constexpr uint8_t kFlagsVersionInline = 0x2;
constexpr size_t kMaxVersionSize = 128;
constexpr size_t kMaxGodebugSize = 4096;
constexpr size_t kMaxVarintSize = 10;
// cmd/go/internal/modload's infoStart and infoEnd frame the module info.
constexpr size_t kSentinelSize = 16;

// encoding/binary's Uvarint: little-endian base-128, at most 10 bytes. False when `b` ends
// first or the value overflows 64 bits.
bool Uvarint(absl::string_view b, size_t* pos, uint64_t* out) {
  uint64_t x = 0;
  for (size_t i = 0; i < kMaxVarintSize; ++i) {
    if (*pos >= b.size()) return false;
    uint8_t c = static_cast<uint8_t>(b[(*pos)++]);
    if (i == kMaxVarintSize - 1 && c > 1) return false;
    x |= static_cast<uint64_t>(c & 0x7f) << (7 * i);
    if (c < 0x80) {
      *out = x;
      return true;
    }
  }
  return false;
}

// A uvarint-length-prefixed string at *pos of at most `max` bytes, within `b`.
std::optional<absl::string_view> LengthPrefixed(absl::string_view b, size_t* pos, size_t max) {
  uint64_t size = 0;
  if (!Uvarint(b, pos, &size)) return std::nullopt;
  if (size > max || size > b.size() - *pos) return std::nullopt;
  absl::string_view s = b.substr(*pos, static_cast<size_t>(size));
  *pos += s.size();
  return s;
}

bool Printable(absl::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// The DefaultGODEBUG setting of the module info (runtime/debug's BuildInfo text), "" when
// it has none or one this does not take (quoted, not printable, too long).
std::string DefaultGodebug(absl::string_view mod) {
  // Framed by the 16-byte sentinels (debug/buildinfo strips them the same way).
  if (mod.size() < 2 * kSentinelSize + 1 || mod[mod.size() - kSentinelSize - 1] != '\n') {
    return "";
  }
  mod = mod.substr(kSentinelSize, mod.size() - 2 * kSentinelSize);
  for (absl::string_view line : absl::StrSplit(mod, '\n')) {
    if (!absl::ConsumePrefix(&line, "build\tDefaultGODEBUG=")) continue;
    if (line.size() > kMaxGodebugSize || !Printable(line) || absl::StartsWith(line, "\"")) {
      return "";
    }
    return std::string(line);
  }
  return "";
}

// The build info of the header at `at` (the magic is there), when it is a valid inline
// one. The module info is optional: a prefix may end before it.
std::optional<GoBuildInfo> DecodeAt(absl::string_view b, size_t at) {
  if (b.size() - at < kHeaderSize) return std::nullopt;
  uint8_t flags = static_cast<uint8_t>(b[at + kFlagsOffset]);
  if ((flags & kFlagsVersionInline) == 0) return std::nullopt;  // Go < 1.18: pointers
  size_t pos = at + kHeaderSize;
  std::optional<absl::string_view> v = LengthPrefixed(b, &pos, kMaxVersionSize);
  if (!v.has_value() || v->size() <= 2 || !absl::StartsWith(*v, "go") || !Printable(*v)) {
    return std::nullopt;
  }
  GoBuildInfo info;
  info.version = std::string(*v);
  std::optional<absl::string_view> mod = LengthPrefixed(b, &pos, b.size());
  if (mod.has_value()) info.default_godebug = DefaultGodebug(*mod);
  return info;
}

// pread until `buf` is full or the file ends; the bytes read, or -1 with errno set.
ssize_t ReadAt(int fd, std::string* buf, size_t offset) {
  size_t got = 0;
  while (got < buf->size()) {
    ssize_t n = pread(fd, buf->data() + got, buf->size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

std::optional<GoBuildInfo> GoBuildInfoFromBinary(absl::string_view bytes) {
  for (size_t i = bytes.find(kMagic); i != absl::string_view::npos; i = bytes.find(kMagic, i + 1)) {
    if (i % kAlign != 0) continue;
    if (std::optional<GoBuildInfo> info = DecodeAt(bytes, i); info.has_value()) return info;
  }
  return std::nullopt;
}

std::optional<std::string> GoVersionFromBinary(absl::string_view bytes) {
  std::optional<GoBuildInfo> info = GoBuildInfoFromBinary(bytes);
  if (!info.has_value()) return std::nullopt;
  return info->version;
}

std::optional<GoBuildInfo> ReadGoBuildInfo(const std::string& exe_path, std::string* error) {
  if (error != nullptr) error->clear();
  int fd = open(exe_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error != nullptr) {
      *error = std::string(ErrnoStatus(errno, absl::StrCat("open ", exe_path)).message());
    }
    return std::nullopt;
  }
  auto fail = [&](int err) -> std::optional<GoBuildInfo> {
    if (error != nullptr) {
      *error = std::string(ErrnoStatus(err, absl::StrCat("read ", exe_path)).message());
    }
    close(fd);
    return std::nullopt;
  };
  // Chunks start at multiples of kChunk (so 16-byte alignment in a chunk is alignment in
  // the file) and overlap the next by more than a header and its version need, so a header
  // near a chunk's end is found whole in one of the two.
  constexpr size_t kChunk = size_t{1} << 20;
  constexpr size_t kOverlap = 4096;
  static_assert(kOverlap >= kHeaderSize + kMaxVarintSize + kMaxVersionSize);
  static_assert(kChunk % kAlign == 0);
  std::string buf(kChunk + kOverlap, '\0');
  for (size_t offset = 0; offset < kGoBuildInfoScanLimit; offset += kChunk) {
    ssize_t got = ReadAt(fd, &buf, offset);
    if (got < 0) return fail(errno);
    absl::string_view chunk(buf.data(), static_cast<size_t>(got));
    for (size_t i = chunk.find(kMagic); i != absl::string_view::npos;
         i = chunk.find(kMagic, i + 1)) {
      if (i % kAlign != 0 || !DecodeAt(chunk, i).has_value()) continue;
      // Found: read again from the header, so that the module info after it is whole.
      std::string from(kChunk, '\0');
      ssize_t n = ReadAt(fd, &from, offset + i);
      if (n < 0) return fail(errno);
      close(fd);
      return DecodeAt(absl::string_view(from.data(), static_cast<size_t>(n)), 0);
    }
    if (static_cast<size_t>(got) < buf.size()) break;  // the file ended
  }
  close(fd);
  return std::nullopt;
}

std::optional<std::string> ReadGoVersion(const std::string& exe_path, std::string* error) {
  std::optional<GoBuildInfo> info = ReadGoBuildInfo(exe_path, error);
  if (!info.has_value()) return std::nullopt;
  return info->version;
}

}  // namespace booster::agent
