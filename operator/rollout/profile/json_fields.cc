// Lenient JSON field readers (json_fields.h).
#include "operator/rollout/profile/json_fields.h"

#include <algorithm>
#include <cstdint>

namespace booster::rollout::profile_internal {

const Json* Field(const Json& obj, absl::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string TypeName(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number_float()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_array()) return "a list";
  if (j.is_object()) return "an object";
  return "null";
}

std::optional<int64_t> AsInt(const Json& j) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

std::string StringAt(const Json& j, absl::string_view key) {
  const Json* v = Field(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t IntAt(const Json& j, absl::string_view key) {
  const Json* v = Field(j, key);
  if (v == nullptr) return 0;
  std::optional<int64_t> i = AsInt(*v);
  return i.value_or(0);
}

int IntAt32(const Json& j, absl::string_view key) {
  int64_t v = IntAt(j, key);
  return static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

}  // namespace booster::rollout::profile_internal
