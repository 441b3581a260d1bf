// FNV-1a and the rollout hash (hash.h).
#include "operator/rollout/profile/hash.h"

#include <cstdint>

#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {

std::string Fnv1aHex(absl::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = kHex[h & 0xf];
    h >>= 4;
  }
  return out;
}

std::string RolloutHash(const ProfileSpec& spec) {
  Json j;
  j["tuning"] = TuningToJson(spec.tuning);
  j["steps"] = spec.rollout.steps;
  j["containers"] = spec.target_ref.containers;
  j["target"] = spec.target_ref.name;
  return Fnv1aHex(j.dump());
}

std::string ExperimentHash(const ProfileSpec& spec) {
  const AnalysisSpec& a = spec.rollout.analysis;
  Json j;
  j["interval"] = absl::ToInt64Milliseconds(a.interval);
  j["source"] = a.source;
  j["mode"] = static_cast<int>(a.mode);
  j["baseline"] = static_cast<int>(a.baseline);
  return Fnv1aHex(j.dump());
}

}  // namespace booster::rollout
