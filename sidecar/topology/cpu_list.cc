#include "sidecar/topology/cpu_list.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace booster::agent {
namespace {

struct BitmapFree {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

// hwloc's list parser is lenient where the kernel's format is not: it reads "1-" as every
// number from 1 up, "3-1" as nothing, "-1", "1.5" and "0x3" as numbers, and skips empty
// items. In a flag or a directive those are typos, so each item must be a number or a
// range `lo-hi` of at most five digits each before hwloc reads it (the digit bound keeps
// a huge number from allocating a huge bitmap), and must name at least one number.
bool IsListItem(absl::string_view item) {
  auto number = [](absl::string_view s) {
    return !s.empty() && s.size() <= 5 && absl::c_all_of(s, absl::ascii_isdigit);
  };
  size_t dash = item.find('-');
  if (dash == absl::string_view::npos) return number(item);
  return number(item.substr(0, dash)) && number(item.substr(dash + 1));
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<int> out;
  if (text.empty()) return out;
  Bitmap all(hwloc_bitmap_alloc());
  Bitmap one(hwloc_bitmap_alloc());
  if (all == nullptr || one == nullptr) return absl::ResourceExhaustedError("hwloc_bitmap_alloc");
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string item(absl::StripAsciiWhitespace(part));
    if (!IsListItem(item) || hwloc_bitmap_list_sscanf(one.get(), item.c_str()) != 0 ||
        hwloc_bitmap_iszero(one.get()) || hwloc_bitmap_last(one.get()) > kMaxCpuNumber) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad CPU list \"", text, "\": \"", item, "\" is not ",
                       item.find('-') == std::string::npos ? "a number" : "a range lo-hi"));
    }
    hwloc_bitmap_or(all.get(), all.get(), one.get());
  }
  out.reserve(static_cast<size_t>(hwloc_bitmap_weight(all.get())));
  for (int cpu = hwloc_bitmap_first(all.get()); cpu != -1;
       cpu = hwloc_bitmap_next(all.get(), cpu)) {
    out.push_back(cpu);
  }
  return out;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  Bitmap set(hwloc_bitmap_alloc());
  if (set == nullptr) return "";
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu <= kMaxCpuNumber) hwloc_bitmap_set(set.get(), static_cast<unsigned>(cpu));
  }
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set.get()) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

std::vector<int> IntersectSorted(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace booster::agent
