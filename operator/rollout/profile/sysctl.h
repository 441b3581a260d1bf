// The sysctl allowlist: the namespaced sysctls (the pod's own network and IPC namespaces)
// the operator will write, with a validator for each value. Anything host-wide is refused
// whatever the kubelet would allow. The spec parser (tuning.cc) checks spec.tuning.sysctls
// against it; docs/crd.md lists it for users. Includes only Abseil.
//
//   if (!IsKnownSysctl(key)) Reject(key);
//   if (std::string why = CheckSysctlValue(key, value); !why.empty()) Reject(key, why);
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_SYSCTL_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_SYSCTL_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace booster::rollout {

bool IsKnownSysctl(absl::string_view key);
// Returns "" when `value` is acceptable for `key`, otherwise why not (a phrase to follow
// the value: "must be from 0 to 2").
std::string CheckSysctlValue(absl::string_view key, absl::string_view value);
// Every key of the allowlist, in its order.
std::vector<std::string> KnownSysctls();

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_SYSCTL_H_
