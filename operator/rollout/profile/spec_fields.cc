// Strict, reporting readers of spec fields (spec_fields.h).
#include "operator/rollout/profile/spec_fields.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::rollout::profile_internal {

std::string FieldPath(absl::string_view parent, absl::string_view key) {
  return absl::StrCat(parent, ".", key);
}

// Checks that `j` is an object and reports keys the schema does not know (the API server
// prunes them, so they only reach here from offline validation, where they are typos).
bool CheckObject(const Json& j, absl::string_view path,
                 std::initializer_list<absl::string_view> keys, SpecErrors& errors) {
  if (!j.is_object()) {
    errors.Add(path, absl::StrCat("must be an object, got ", TypeName(j)));
    return false;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      errors.Add(FieldPath(path, it.key()),
                 absl::StrCat("unknown field; known fields are ", absl::StrJoin(keys, ", ")));
    }
  }
  return true;
}

std::optional<int64_t> GetInt(const Json& obj, absl::string_view key, absl::string_view parent,
                              int64_t min, int64_t max, SpecErrors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  std::optional<int64_t> v = AsInt(*j);
  if (!v) {
    errors.Add(FieldPath(parent, key), absl::StrCat("must be an integer, got ", TypeName(*j)));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    errors.Add(FieldPath(parent, key),
               absl::StrCat("must be between ", min, " and ", max, ", got ", *v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> GetNumber(const Json& obj, absl::string_view key, absl::string_view parent,
                                double min, double max, SpecErrors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_number()) {
    errors.Add(FieldPath(parent, key), absl::StrCat("must be a number, got ", TypeName(*j)));
    return std::nullopt;
  }
  double v = j->get<double>();
  if (!(v >= min && v <= max)) {
    errors.Add(FieldPath(parent, key),
               absl::StrCat("must be between ", min, " and ", max, ", got ", v));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> GetBool(const Json& obj, absl::string_view key, absl::string_view parent,
                            SpecErrors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_boolean()) {
    errors.Add(FieldPath(parent, key), absl::StrCat("must be true or false, got ", TypeName(*j)));
    return std::nullopt;
  }
  return j->get<bool>();
}

std::optional<std::string> GetString(const Json& obj, absl::string_view key,
                                     absl::string_view parent, SpecErrors& errors) {
  const Json* j = Field(obj, key);
  if (j == nullptr) return std::nullopt;
  if (!j->is_string()) {
    errors.Add(FieldPath(parent, key), absl::StrCat("must be a string, got ", TypeName(*j)));
    return std::nullopt;
  }
  return j->get<std::string>();
}

// Returns the index of the value in `values`, or nullopt (reported) when absent/invalid.
std::optional<size_t> GetEnum(const Json& obj, absl::string_view key, absl::string_view parent,
                              absl::Span<const absl::string_view> values, SpecErrors& errors) {
  std::optional<std::string> s = GetString(obj, key, parent, errors);
  if (!s) return std::nullopt;
  size_t i = 0;
  for (absl::string_view v : values) {
    if (*s == v) return i;
    ++i;
  }
  errors.Add(FieldPath(parent, key), absl::StrCat("unsupported value \"", *s, "\"; use one of ",
                                                  absl::StrJoin(values, ", ")));
  return std::nullopt;
}

std::optional<absl::Duration> GetDuration(const Json& obj, absl::string_view key,
                                          absl::string_view parent, absl::Duration min,
                                          absl::Duration max, SpecErrors& errors) {
  std::optional<std::string> s = GetString(obj, key, parent, errors);
  if (!s) return std::nullopt;
  absl::StatusOr<absl::Duration> d = ParseGoDuration(*s);
  if (!d.ok()) {
    errors.Add(FieldPath(parent, key), d.status().message());
    return std::nullopt;
  }
  if (*d < min || *d > max) {
    errors.Add(FieldPath(parent, key), absl::StrCat("must be between ", FormatGoDuration(min),
                                                    " and ", FormatGoDuration(max), ", got ", *s));
    return std::nullopt;
  }
  return *d;
}

}  // namespace booster::rollout::profile_internal
