// The canonical tuning JSON and its reader (tuning.h).
#include "operator/rollout/profile/tuning.h"

#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"

namespace booster::rollout {
namespace {

Json J(const char* text) { return Json::parse(text); }

TEST(TuningFromJsonTest, ReadsBackWhatTuningToJsonWrites) {
  absl::StatusOr<ProfileSpec> spec =
      ParseSpec(J(R"({"targetRef": {"kind": "Deployment", "name": "web"},
      "tuning": {"cpu": {"placement": "whole-cores", "numa": "align"},
                 "sysctls": {"net.core.somaxconn": 4096},
                 "runtime": {"go": {"gomaxprocs": 4, "gogc": 200},
                             "preload": {"listenBacklog": 4096, "allocator": "jemalloc"}}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<Tuning> back = TuningFromJson(TuningToJson(spec->tuning));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(TuningToJson(*back), TuningToJson(spec->tuning));
  EXPECT_FALSE(TuningFromJson(J(R"({"sysctls": {"vm.swappiness": 1}})")).ok());
}

}  // namespace
}  // namespace booster::rollout
