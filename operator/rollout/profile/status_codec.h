// The status codec: a BoosterProfile's .status to and from JSON, as the operator writes it
// through /status and reads it back on every reconcile. Reading is lenient (a malformed or
// unknown value reads as the default), so an operator never stops on a status it or an
// older version wrote; unset times are absl::InfinitePast() and are omitted from the JSON.
// Includes only types.h; status_codec.cc also uses names.h, time_text.h and json_fields.h.
//
//   RolloutStatus s = ParseStatus(object["status"]);
//   patch["status"] = StatusToJson(s);   // ParseStatus(StatusToJson(s)) == s
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_STATUS_CODEC_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_STATUS_CODEC_H_

#include "operator/rollout/profile/types.h"

namespace booster::rollout {

RolloutStatus ParseStatus(const Json& status);
Json StatusToJson(const RolloutStatus& status);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_STATUS_CODEC_H_
