// A BoosterProfile comes from the API server as JSON that any user allowed to create
// profiles wrote (the CRD schema stops much, but not all, of it, and older objects
// predate schema changes). operator/rollout/profile/spec.h parses it without exceptions.
// Checks: no input crashes or throws; a spec error is kInvalidArgument; the canonical
// tuning of a valid spec (TuningToJson, the agent's BOOSTER_TUNING) is accepted by the
// agent's reader (sidecar/loop/directive_from_tuning.h); the status codec is a fixed point (StatusToJson(ParseStatus(StatusToJson(s)))
// is StatusToJson(s)), so a restarted operator reads back exactly what it wrote.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "operator/rollout/profile/hash.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/profile/tuning.h"
#include "sidecar/loop/directive_from_tuning.h"

namespace {

namespace rollout = booster::rollout;
using rollout::Json;

void CheckSpec(const Json& spec_json) {
  absl::StatusOr<rollout::ProfileSpec> spec = rollout::ParseSpec(spec_json);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument, "code %d: %s",
               static_cast<int>(spec.status().code()),
               std::string(spec.status().message()).c_str());
    return;
  }
  // The canonical tuning is what the operator writes into BOOSTER_TUNING; the agent must
  // be able to read every tuning the operator accepts.
  const std::string tuning = rollout::TuningToJson(spec->tuning).dump();
  absl::StatusOr<std::optional<booster::agent::Directive>> d =
      booster::agent::DirectiveFromTuning(tuning, "canary");
  FUZZ_CHECK(d.ok(), "the agent refuses the operator's tuning: %s\n%s",
             d.status().ToString().c_str(), tuning.c_str());
  FUZZ_CHECK(rollout::RolloutHash(*spec) == rollout::RolloutHash(*spec), "hash not deterministic");
}

void CheckStatus(const Json& status_json) {
  const Json first = rollout::StatusToJson(rollout::ParseStatus(status_json));
  const Json second = rollout::StatusToJson(rollout::ParseStatus(first));
  FUZZ_CHECK(first == second, "status codec is not a fixed point:\n%s\n%s", first.dump().c_str(),
             second.dump().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Json j = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;

  // As a whole object, as the informer delivers it.
  absl::StatusOr<rollout::Profile> p = rollout::ParseProfile(j);
  if (p.ok() && j.is_object()) {
    if (j.contains("spec")) CheckSpec(j["spec"]);
    if (j.contains("status")) CheckStatus(j["status"]);
  }
  // As a bare spec and a bare status, so the fuzzer need not find the envelope first.
  CheckSpec(j);
  CheckStatus(j);
  return 0;
}
