// Strict readers of spec fields for the parsers of this folder (spec.cc, tuning.cc): each
// checks a field's type and range and, when it is wrong, adds a problem prefixed by the
// field's path to a SpecErrors, so that one `kubectl describe` shows every problem of a
// spec at once. Namespace profile_internal; includes json_fields.h, time_text.h and
// Abseil only.
//
//   SpecErrors errors;
//   if (auto v = GetInt(preload, "listenBacklog", "spec.tuning.runtime.preload", 1, 65535,
//                       errors)) out.listen_backlog = *v;
//   if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_FIELDS_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "operator/rollout/profile/json_fields.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout::profile_internal {

// Collects every problem of a spec, each as "<path>: <message>".
class SpecErrors {
 public:
  void Add(absl::string_view path, absl::string_view message) {
    list_.push_back(absl::StrCat(path, ": ", message));
  }
  bool empty() const { return list_.empty(); }
  // The problems separated by "; ": the message of the InvalidSpec condition.
  std::string Joined() const { return absl::StrJoin(list_, "; "); }

 private:
  std::vector<std::string> list_;
};

// "<parent>.<key>".
std::string FieldPath(absl::string_view parent, absl::string_view key);

// Checks that `j` is an object whose keys are all in `keys`; false (reported) when it is
// no object. Unknown keys are reported, and the object is still read.
bool CheckObject(const Json& j, absl::string_view path,
                 std::initializer_list<absl::string_view> keys, SpecErrors& errors);

// The field `key` of `obj`, at path `parent`.`key`: nullopt when it is absent (not
// reported) or wrong (reported).
std::optional<int64_t> GetInt(const Json& obj, absl::string_view key, absl::string_view parent,
                              int64_t min, int64_t max, SpecErrors& errors);
std::optional<double> GetNumber(const Json& obj, absl::string_view key, absl::string_view parent,
                                double min, double max, SpecErrors& errors);
std::optional<bool> GetBool(const Json& obj, absl::string_view key, absl::string_view parent,
                            SpecErrors& errors);
std::optional<std::string> GetString(const Json& obj, absl::string_view key,
                                     absl::string_view parent, SpecErrors& errors);
// The index of the field's value in `values`.
std::optional<size_t> GetEnum(const Json& obj, absl::string_view key, absl::string_view parent,
                              absl::Span<const absl::string_view> values, SpecErrors& errors);
// A Go duration (time_text.h) within [min, max].
std::optional<absl::Duration> GetDuration(const Json& obj, absl::string_view key,
                                          absl::string_view parent, absl::Duration min,
                                          absl::Duration max, SpecErrors& errors);

}  // namespace booster::rollout::profile_internal

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_SPEC_FIELDS_H_
