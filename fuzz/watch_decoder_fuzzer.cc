// The Kubernetes watch stream (operator/kube/watch_decoder.h): newline-delimited JSON
// events from the API server, arriving in chunks cut anywhere. Arbitrary bytes, split at
// a fuzzer-chosen point, must never crash the decoder, and decoding must not depend on
// how the stream was split: both ways succeed or fail together, with the same events.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
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
  // Inputs stay far below the 64 KiB line limit, so the split cannot change the outcome.
  FUZZ_CHECK(sa.ok() == sb.ok(), "whole: %s, split at %zu: %s", sa.ToString().c_str(), cut,
             sb.ToString().c_str());
  FUZZ_CHECK(a.size() == b.size(), "%zu events whole, %zu split at %zu", a.size(), b.size(),
             cut);
  for (size_t i = 0; i < a.size(); ++i) {
    FUZZ_CHECK(a[i].type == b[i].type && a[i].object == b[i].object,
               "event %zu differs when split at %zu", i, cut);
  }
  return 0;
}
