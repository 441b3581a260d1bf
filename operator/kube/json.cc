#include "operator/kube/json.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <cstdint>

namespace booster::kube {

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed JSON (", text.size(), " bytes): ", text.substr(0, 120)));
  }
  return j;
}

namespace {
const Json* At(const Json& j, const char* pointer) {
  // json_pointer parsing throws on malformed pointers; ours are literals, but stay safe.
  try {
    Json::json_pointer p(pointer);
    if (!j.contains(p)) return nullptr;
    return &j.at(p);
  } catch (const Json::exception&) {
    return nullptr;
  }
}
}  // namespace

std::string JsonString(const Json& j, const char* pointer) {
  const Json* v = At(j, pointer);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t JsonInt(const Json& j, const char* pointer, int64_t fallback) {
  const Json* v = At(j, pointer);
  if (v == nullptr) return fallback;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    return u > static_cast<uint64_t>(INT64_MAX) ? fallback : static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    // Out-of-range float-to-int conversion is undefined; refuse it.
    if (!(d >= -9.2e18 && d <= 9.2e18)) return fallback;
    return static_cast<int64_t>(d);
  }
  return fallback;
}

}  // namespace booster::kube
