#include "common/go_runtime.h"

#include <algorithm>
#include <charconv>

namespace booster {

std::optional<int> GoMaxProcsFor(std::optional<int64_t> cpu_limit_millis,
                                 std::optional<int> cpus_granted) {
  if (cpus_granted.has_value() && *cpus_granted < 1) cpus_granted.reset();
  if (!cpu_limit_millis.has_value() || *cpu_limit_millis <= 0) return cpus_granted;
  int64_t whole = std::max<int64_t>(1, *cpu_limit_millis / 1000);
  if (cpus_granted.has_value()) whole = std::min<int64_t>(whole, *cpus_granted);
  return static_cast<int>(std::min<int64_t>(whole, 1 << 20));
}

std::optional<int> GoMemLimitPercent(std::string_view spec) {
  if (spec == "auto") return kGoMemLimitAutoPercent;
  if (spec.size() < 2 || spec.back() != '%') return std::nullopt;
  std::string_view digits = spec.substr(0, spec.size() - 1);
  if (digits.front() == '0') return std::nullopt;  // "085%" is not how a percentage is written
  int v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v < 1 || v > 100) {
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> GoMemLimitBytes(std::optional<int64_t> memory_limit_bytes, int percent) {
  if (!memory_limit_bytes.has_value() || *memory_limit_bytes <= 0) return std::nullopt;
  if (percent < 1 || percent > 100) return std::nullopt;
  const int64_t b = *memory_limit_bytes;
  // b / 100 * p cannot overflow for p <= 100; the remainder's share is added exactly.
  return b / 100 * percent + b % 100 * percent / 100;
}

}  // namespace booster
