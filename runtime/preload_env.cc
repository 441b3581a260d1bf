#include "runtime/preload_env.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace booster::runtime {
namespace {

absl::string_view Basename(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// Runtimes that must stay at the head of LD_PRELOAD (GCC's and Clang's sanitizers).
bool IsSanitizerRuntime(absl::string_view path) {
  absl::string_view base = Basename(path);
  for (absl::string_view prefix :
       {"libasan.", "libtsan.", "libubsan.", "liblsan.", "libhwasan.", "libclang_rt.asan",
        "libclang_rt.tsan", "libclang_rt.ubsan", "libclang_rt.hwasan", "libclang_rt.msan"}) {
    if (absl::StartsWith(base, prefix)) return true;
  }
  return false;
}

// The allocator a library file belongs to, judged by its name.
std::optional<Allocator> AllocatorOf(absl::string_view path) {
  absl::string_view base = Basename(path);
  if (absl::StartsWith(base, "libjemalloc")) return Allocator::kJemalloc;
  if (absl::StartsWith(base, "libmimalloc")) return Allocator::kMimalloc;
  if (absl::StartsWith(base, "libtcmalloc")) return Allocator::kTcmalloc;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Allocator> ParseAllocator(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  if (lower.empty() || lower == "glibc" || lower == "system" || lower == "none") {
    return Allocator::kGlibc;
  }
  if (lower == "jemalloc") return Allocator::kJemalloc;
  if (lower == "mimalloc") return Allocator::kMimalloc;
  if (lower == "tcmalloc") return Allocator::kTcmalloc;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown allocator '", name, "': want glibc, jemalloc, mimalloc or tcmalloc"));
}

absl::string_view AllocatorName(Allocator allocator) {
  switch (allocator) {
    case Allocator::kGlibc:
      return "glibc";
    case Allocator::kJemalloc:
      return "jemalloc";
    case Allocator::kMimalloc:
      return "mimalloc";
    case Allocator::kTcmalloc:
      return "tcmalloc";
  }
  return "unknown";
}

std::vector<std::string> AllocatorLibraryNames(Allocator allocator) {
  switch (allocator) {
    case Allocator::kGlibc:
      return {};
    case Allocator::kJemalloc:
      return {"libjemalloc.so.2"};
    case Allocator::kMimalloc:
      return {"libmimalloc.so.2"};
    // The minimal build is the plain allocator; the full one adds the heap profiler.
    case Allocator::kTcmalloc:
      return {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4"};
  }
  return {};
}

absl::string_view AllocatorPackage(Allocator allocator) {
  switch (allocator) {
    case Allocator::kGlibc:
      return "libc6";
    case Allocator::kJemalloc:
      return "libjemalloc2";
    case Allocator::kMimalloc:
      return "libmimalloc2.0";
    case Allocator::kTcmalloc:
      return "libtcmalloc-minimal4 (or libgoogle-perftools4)";
  }
  return "";
}

std::vector<std::string> DefaultLibraryDirs() {
#if defined(__x86_64__)
  constexpr const char* kTriplet = "x86_64-linux-gnu";
#elif defined(__aarch64__)
  constexpr const char* kTriplet = "aarch64-linux-gnu";
#else
  constexpr const char* kTriplet = "";
#endif
  std::vector<std::string> dirs;
  if (kTriplet[0] != '\0') {
    dirs.push_back(absl::StrCat("/usr/lib/", kTriplet));
    dirs.push_back(absl::StrCat("/lib/", kTriplet));
  }
  for (const char* d : {"/usr/lib64", "/usr/lib", "/usr/local/lib"}) dirs.push_back(d);
  return dirs;
}

absl::StatusOr<std::string> ComposeLdPreload(const PreloadRequest& request,
                                             const FileExists& exists) {
  std::string allocator_lib;
  if (!request.allocator_lib.empty()) {
    if (request.allocator_lib[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("allocator library must be an absolute path: ", request.allocator_lib));
    }
    if (!exists(request.allocator_lib)) {
      return absl::NotFoundError(
          absl::StrCat("allocator library not found: ", request.allocator_lib));
    }
    allocator_lib = request.allocator_lib;
  } else if (request.allocator != Allocator::kGlibc) {
    std::vector<std::string> dirs =
        request.library_dirs.empty() ? DefaultLibraryDirs() : request.library_dirs;
    std::vector<std::string> names = AllocatorLibraryNames(request.allocator);
    for (const std::string& name : names) {
      for (const std::string& dir : dirs) {
        std::string candidate = absl::StrCat(dir, "/", name);
        if (exists(candidate)) {
          allocator_lib = candidate;
          break;
        }
      }
      if (!allocator_lib.empty()) break;
    }
    if (allocator_lib.empty()) {
      return absl::NotFoundError(
          absl::StrCat(AllocatorName(request.allocator), ": ", absl::StrJoin(names, " or "),
                       " not found in ", absl::StrJoin(dirs, ":"), "; install the Debian package ",
                       AllocatorPackage(request.allocator)));
    }
  }
  if (!request.runtime_lib.empty()) {
    if (request.runtime_lib[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "libbooster.so must be given as an absolute path (LD_PRELOAD resolves relative "
          "paths against each process's working directory): ",
          request.runtime_lib));
    }
    if (!exists(request.runtime_lib)) {
      return absl::NotFoundError(absl::StrCat("runtime library not found: ", request.runtime_lib));
    }
  }

  std::vector<std::string> sanitizers;
  std::vector<std::string> others;
  std::optional<Allocator> chosen;
  if (!allocator_lib.empty()) chosen = AllocatorOf(allocator_lib);
  for (absl::string_view entry :
       absl::StrSplit(request.existing, absl::ByAnyChar(": \t"), absl::SkipEmpty())) {
    std::string item(entry);
    if (IsSanitizerRuntime(item)) {
      sanitizers.push_back(item);
      continue;
    }
    if (!request.runtime_lib.empty() && Basename(item) == Basename(request.runtime_lib)) {
      continue;  // another copy of the runtime library: ours replaces it
    }
    std::optional<Allocator> present = AllocatorOf(item);
    if (present && !allocator_lib.empty()) {
      if (present != chosen) {
        return absl::InvalidArgumentError(absl::StrCat(
            "LD_PRELOAD already loads ", AllocatorName(*present), " (", item,
            "); a process can use one allocator: remove it or ask for ", AllocatorName(*present)));
      }
      continue;  // the same allocator: it goes in its own place below
    }
    others.push_back(item);
  }

  std::vector<std::string> ordered = sanitizers;
  if (!allocator_lib.empty()) ordered.push_back(allocator_lib);
  if (!request.runtime_lib.empty()) ordered.push_back(request.runtime_lib);
  ordered.insert(ordered.end(), others.begin(), others.end());
  std::vector<std::string> unique;
  for (std::string& item : ordered) {
    if (std::find(unique.begin(), unique.end(), item) == unique.end()) unique.push_back(item);
  }
  return absl::StrJoin(unique, ":");
}

absl::StatusOr<std::string> ComposeLdPreload(const PreloadRequest& request) {
  return ComposeLdPreload(request,
                          [](const std::string& path) { return access(path.c_str(), R_OK) == 0; });
}

}  // namespace booster::runtime
