// A target's pod template is the team's: whatever their manifest says, as the API server
// stored it, plus Booster's layer, whose record (the annotation booster.dev/layer) anyone
// who can edit the Deployment can damage. operator/rollout/pod_template.h reads it without
// exceptions. Checks: no input crashes or throws; taking the layer off is a fixed point
// (the team's template of the team's template is itself); the layer comes off what it was
// put on (enrolling the team's template of an enrolled one gives the same template, and a
// tuned one strips to the same team template as the enrolled one); a tuned template
// carries every part of its own layer; tuning is idempotent.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/types.h"

namespace {

namespace rollout = booster::rollout;
using rollout::Json;

rollout::Tuning SampleTuning() {
  rollout::Tuning t;
  t.placement = rollout::CpuPlacement::kWholeCores;
  t.sysctls = {{"net.core.somaxconn", "4096"}};
  t.go.gomaxprocs = "auto";
  t.go.gomemlimit = "auto";
  t.go.gogc = "200";
  t.preload.listen_backlog = 4096;
  t.preload.tcp_no_delay = true;
  t.preload.allocator = rollout::Allocator::kJemalloc;
  return t;
}

void Check(const Json& tmpl) {
  const rollout::MutationOptions opts;
  const Json team = rollout::TeamTemplate(tmpl, opts);
  FUZZ_CHECK(rollout::TeamTemplate(team, opts) == team, "not a fixed point:\n%s",
             team.dump().c_str());
  (void)rollout::TemplateTuning(tmpl);
  const rollout::EnrollContext ctx{"shop", "web", {}};
  absl::StatusOr<Json> enrolled = rollout::EnrolledTemplate(tmpl, ctx, opts);
  if (!enrolled.ok()) {
    FUZZ_CHECK(enrolled.status().code() == absl::StatusCode::kInvalidArgument, "code %d",
               static_cast<int>(enrolled.status().code()));
    return;
  }
  // Enrolling and taking it off again changes nothing more after the first round (the
  // first may drop an empty list of the input, which the API server never returns).
  const Json once = rollout::TeamTemplate(*enrolled, opts);
  absl::StatusOr<Json> again = rollout::EnrolledTemplate(once, ctx, opts);
  FUZZ_CHECK(again.ok() && rollout::TeamTemplate(*again, opts) == once && *again == *enrolled,
             "the enrollment does not come off:\n%s\n%s", enrolled->dump().c_str(),
             once.dump().c_str());
  absl::StatusOr<Json> tuned =
      rollout::TunedTemplate(tmpl, SampleTuning(), rollout::kArmCanary, ctx, opts);
  FUZZ_CHECK(tuned.ok(), "enrolled but not tunable: %s", tuned.status().ToString().c_str());
  const Json back = rollout::TeamTemplate(*tuned, opts);
  FUZZ_CHECK(back == rollout::TeamTemplate(*enrolled, opts),
             "the tuning does not come off as the enrollment does:\n%s\n%s",
             back.dump().c_str(), rollout::TeamTemplate(*enrolled, opts).dump().c_str());
  FUZZ_CHECK(rollout::LayerDifferences(*tuned, *tuned, opts).empty(),
             "a tuned template lacks its own layer:\n%s", tuned->dump().c_str());
  FUZZ_CHECK(rollout::TunedTemplate(*tuned, SampleTuning(), rollout::kArmCanary, ctx, opts)
                     .value_or(Json()) == *tuned,
             "tuning is not idempotent");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Json j = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  Check(j);
  // The same template with a damaged layer record: any JSON, or not JSON at all.
  if (j.is_object() && (!j.contains("metadata") || j["metadata"].is_object()) &&
      (!j.contains("metadata") || !j["metadata"].contains("annotations") ||
       j["metadata"]["annotations"].is_object())) {
    Json damaged = j;
    damaged["metadata"]["annotations"][rollout::kLayerAnnotation] = j.dump();
    damaged["metadata"]["annotations"][rollout::kTemplateHashAnnotation] = "x";
    Check(damaged);
  }
  return 0;
}
