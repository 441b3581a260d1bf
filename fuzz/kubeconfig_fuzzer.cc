// The kubeconfig (operator/kube/config.h) is user-supplied YAML, parsed by yaml-cpp inside
// the config adapter. Checks: no input crashes or lets an exception escape (yaml-cpp's
// are caught and become statuses); a parsed config has an https server without a
// trailing slash and a namespace, and errors are kInvalidArgument, kNotFound,
// kUnavailable or kUnimplemented — codes the caller can act on.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "operator/kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view yaml(reinterpret_cast<const char*>(data), size);
  // Files named in the kubeconfig are read (certificate-authority, token-file, ...);
  // keep the fuzzer away from device and kernel files that never end or block.
  for (absl::string_view bad : {"/dev", "/proc", "/sys", "/run"}) {
    if (absl::StrContains(yaml, bad)) return 0;
  }
  absl::StatusOr<booster::kube::Config> c =
      booster::kube::ParseKubeconfig(yaml, "/nonexistent-booster-fuzz");
  if (c.ok()) {
    FUZZ_CHECK(absl::StartsWith(c->server, "https://") && c->server.back() != '/',
               "server \"%s\"", c->server.c_str());
    FUZZ_CHECK(!c->default_namespace.empty(), "empty default namespace");
  } else {
    const absl::StatusCode code = c.status().code();
    FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument ||
                   code == absl::StatusCode::kNotFound ||
                   code == absl::StatusCode::kUnimplemented ||
                   code == absl::StatusCode::kUnavailable,
               "unexpected code %d: %s", static_cast<int>(code),
               std::string(c.status().message()).c_str());
  }
  return 0;
}
