#include "sidecar/install/install.h"

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/allocator.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

absl::StatusOr<std::string> CopyInto(const std::string& src, const std::string& dir,
                                     const std::string& name) {
  absl::StatusOr<std::string> bytes = ReadFile(src);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() < 4 || bytes->compare(0, 4,
                                          "\x7f"
                                          "ELF") != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, " is not a shared library (no ELF header)"));
  }
  std::string dst = absl::StrCat(dir, "/", name);
  if (absl::Status s = WriteFileAtomically(dst, *bytes, 0755); !s.ok()) return s;
  return dst;
}

}  // namespace

absl::StatusOr<std::string> AllocatorPath(const std::string& name, const std::string& dir) {
  if (!name.empty() && name[0] == '/') return name;
  absl::string_view file = AllocatorFileName(name);
  if (!file.empty()) return absl::StrCat(dir, "/", file);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown allocator \"", name, "\": use none, jemalloc, mimalloc, tcmalloc or a path"));
}

std::string LibraryBesideExecutable(const std::string& exe) {
  size_t slash = exe.find_last_of('/');
  if (slash == std::string::npos) return "libbooster.so";
  return exe.substr(0, slash + 1) + "libbooster.so";
}

absl::StatusOr<std::vector<std::string>> InstallRuntime(const InstallOptions& o) {
  struct stat st {};
  if (stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(o.dir,
                                                      " is not a directory (mount the "
                                                      "shared volume there)"));
  }
  if (o.library.empty()) {
    return absl::InvalidArgumentError("no libbooster.so given (--lib or BOOSTER_LIB)");
  }
  std::vector<std::string> out;
  absl::StatusOr<std::string> lib = CopyInto(o.library, o.dir, "libbooster.so");
  if (!lib.ok()) return lib.status();
  out.push_back(*lib);
  if (o.allocator != "none" && !o.allocator.empty()) {
    absl::StatusOr<std::string> src = AllocatorPath(o.allocator, o.allocator_dir);
    if (!src.ok()) return src.status();
    std::string base = src->substr(src->find_last_of('/') + 1);
    absl::StatusOr<std::string> a = CopyInto(*src, o.dir, base);
    if (!a.ok()) return a.status();
    out.push_back(*a);
  }
  return out;
}

}  // namespace booster::agent
