// The JSON value type of the Kubernetes client: nlohmann::json, used for every object the
// client reads or writes. It is header-only and independent of the HTTP transport, so
// swapping cpprestsdk for libcurl does not change a single public signature.
//
//   absl::StatusOr<Json> obj = ParseJson(body);
//   std::string name = JsonString(*obj, "/metadata/name");
#ifndef BOOSTER_OPERATOR_KUBE_JSON_H_
#define BOOSTER_OPERATOR_KUBE_JSON_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace booster::kube {

using Json = nlohmann::json;

// Parses `text`; a syntax error becomes kInvalidArgument (never an exception).
absl::StatusOr<Json> ParseJson(absl::string_view text);

// The string at JSON pointer `pointer` ("/metadata/name"), or "" when absent or not a string.
std::string JsonString(const Json& j, const char* pointer);

// The integer at `pointer`, or `fallback` when absent or not a number.
int64_t JsonInt(const Json& j, const char* pointer, int64_t fallback = 0);

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_JSON_H_
