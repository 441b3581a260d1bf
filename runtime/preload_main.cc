// booster-preload: prints (or runs a command with) the LD_PRELOAD value that chains an
// allocator and libbooster.so.
//
//   booster-preload --allocator jemalloc                 # print the value
//   booster-preload --allocator mimalloc -- redis-server  # run a command under it
//   booster-preload --allocator tcmalloc --no-runtime     # the allocator alone
//
// Exit status: 0 done, 1 the value cannot be composed (message on stderr), 2 usage,
// 127 the command cannot be run.
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/preload_env.h"

namespace {

constexpr char kUsage[] =
    "usage: booster-preload [--allocator glibc|jemalloc|mimalloc|tcmalloc]\n"
    "                       [--allocator-lib PATH] [--lib PATH | --no-runtime]\n"
    "                       [--existing VALUE] [--lib-dir DIR]... [-- COMMAND [ARG]...]\n"
    "Prints the LD_PRELOAD value (allocator first, then libbooster.so, then the current\n"
    "LD_PRELOAD), or runs COMMAND with it. --lib defaults to libbooster.so next to this\n"
    "program; --existing defaults to $LD_PRELOAD.\n";

// libbooster.so beside the running executable (build/runtime/ or an install dir).
std::string DefaultRuntimeLib() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "libbooster.so";
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) return resolved;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

int main(int argc, char** argv) {
  using booster::runtime::PreloadRequest;
  PreloadRequest request;
  const char* existing = getenv("LD_PRELOAD");
  request.existing = existing != nullptr ? existing : "";
  bool runtime = true;
  std::string lib;
  int command = -1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::cerr << "booster-preload: " << arg << " needs a value\n" << kUsage;
        exit(2);
      }
      return argv[++i];
    };
    if (arg == "--allocator") {
      auto allocator = booster::runtime::ParseAllocator(value());
      if (!allocator.ok()) {
        std::cerr << "booster-preload: " << allocator.status().message() << "\n";
        return 2;
      }
      request.allocator = *allocator;
    } else if (arg == "--allocator-lib") {
      request.allocator_lib = Absolute(value());
    } else if (arg == "--lib") {
      lib = Absolute(value());
    } else if (arg == "--no-runtime") {
      runtime = false;
    } else if (arg == "--existing") {
      request.existing = value();
    } else if (arg == "--lib-dir") {
      request.library_dirs.push_back(value());
    } else if (arg == "--") {
      command = i + 1;
      break;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "booster-preload: unknown argument " << arg << "\n" << kUsage;
      return 2;
    }
  }
  if (runtime) request.runtime_lib = lib.empty() ? DefaultRuntimeLib() : lib;
  auto value = booster::runtime::ComposeLdPreload(request);
  if (!value.ok()) {
    std::cerr << "booster-preload: " << value.status().message() << "\n";
    return 1;
  }
  if (command < 0) {
    std::cout << *value << "\n";
    return 0;
  }
  if (command >= argc) {
    std::cerr << "booster-preload: no command after --\n" << kUsage;
    return 2;
  }
  if (value->empty()) {
    unsetenv("LD_PRELOAD");
  } else {
    setenv("LD_PRELOAD", value->c_str(), 1);
  }
  execvp(argv[command], argv + command);
  std::cerr << "booster-preload: cannot run " << argv[command] << ": " << strerror(errno) << "\n";
  return 127;
}
