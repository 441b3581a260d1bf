// libFuzzer target: arbitrary bytes, split at fuzzer-chosen points, must never crash the
// decoder, and decoding must not depend on how the stream was split.
#include <cstddef>
#include <cstdint>
#include "absl/strings/string_view.h"
#include <vector>

#include "operator/kube/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t cut = data[0] % size;
  absl::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  booster::kube::WatchDecoder whole(1 << 16), split(1 << 16);
  std::vector<booster::kube::WatchEvent> a, b;
  absl::Status sa = whole.Feed(in, &a);
  absl::Status sb = split.Feed(in.substr(0, cut < in.size() ? cut : in.size()), &b);
  if (sb.ok() && cut < in.size()) sb = split.Feed(in.substr(cut), &b);
  // Same events either way, as long as both succeeded.
  if (sa.ok() && sb.ok()) {
    if (a.size() != b.size()) __builtin_trap();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].type != b[i].type || a[i].object != b[i].object) __builtin_trap();
    }
  }
  return 0;
}
