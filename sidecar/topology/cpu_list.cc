#include "sidecar/topology/cpu_list.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace booster::agent {
namespace {

// Keeps a malformed list from allocating gigabytes ("0-2000000000").
constexpr int kMaxCpuNumber = 1 << 16;

bool ParseNumber(absl::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0 && *out <= kMaxCpuNumber;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> out;
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    size_t dash = part.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == absl::string_view::npos) {
      if (!ParseNumber(part, &lo)) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad CPU list \"", text, "\": \"", part, "\" is not a number"));
      }
      hi = lo;
    } else if (!ParseNumber(part.substr(0, dash), &lo) ||
               !ParseNumber(part.substr(dash + 1), &hi) || hi < lo) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad CPU list \"", text, "\": \"", part, "\" is not a range lo-hi"));
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j == i) {
      absl::StrAppend(&out, cpus[i]);
    } else {
      absl::StrAppend(&out, cpus[i], "-", cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

std::vector<int> IntersectSorted(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace booster::agent
