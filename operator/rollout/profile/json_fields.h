// Lenient readers of JSON object fields, shared by the spec parser, the tuning parser and
// the status codec: a missing, null or mistyped field reads as absent or as zero, never as
// an error (the strict, reporting readers are in spec_fields.h). For the .cc files of this
// folder only (namespace profile_internal); includes only types.h and Abseil.
//
//   std::string phase = StringAt(status, "phase");   // "" when absent or not a string
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_JSON_FIELDS_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout::profile_internal {

// The field `key` of `obj`; nullptr when `obj` is no object or the field is absent or null.
const Json* Field(const Json& obj, absl::string_view key);
// "an integer", "a string", ...: for messages that say what was found instead.
std::string TypeName(const Json& j);
// An integral JSON number that fits int64_t; nullopt for anything else (12.5, "12").
std::optional<int64_t> AsInt(const Json& j);

// The field as a string, integer or clamped 32-bit integer; "" or 0 when absent or mistyped.
std::string StringAt(const Json& j, absl::string_view key);
int64_t IntAt(const Json& j, absl::string_view key);
int IntAt32(const Json& j, absl::string_view key);

}  // namespace booster::rollout::profile_internal

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_JSON_FIELDS_H_
