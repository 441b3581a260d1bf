#include "sidecar/report/reporter.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace booster::agent {

std::string NewIncarnation() {
  unsigned char bytes[16] = {0};
  FILE* f = std::fopen("/dev/urandom", "rbe");
  size_t n = f != nullptr ? std::fread(bytes, 1, sizeof(bytes), f) : 0;
  if (f != nullptr) std::fclose(f);
  if (n != sizeof(bytes)) {
    // No /dev/urandom (a very bare image): time and pid still differ per run.
    uint64_t t = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    uint64_t p = static_cast<uint64_t>(getpid());
    std::memcpy(bytes, &t, sizeof(t));
    std::memcpy(bytes + 8, &p, sizeof(p));
  }
  std::string out;
  for (unsigned char b : bytes) absl::StrAppend(&out, absl::Hex(b, absl::kZeroPad2));
  return out;
}

}  // namespace booster::agent
