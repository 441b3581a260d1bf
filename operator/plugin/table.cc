#include "operator/plugin/table.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace booster::plugin {

std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  size_t columns = header.size();
  for (const auto& row : rows) columns = std::max(columns, row.size());
  std::vector<size_t> width(columns, 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  if (!header.empty()) measure(header);
  for (const auto& row : rows) measure(row);

  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < columns; ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      line += cell;
      if (i + 1 < columns) line.append(width[i] - cell.size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  if (!header.empty()) emit(header);
  for (const auto& row : rows) emit(row);
  return out;
}

std::string HumanDuration(absl::Duration d) {
  if (d < -absl::Seconds(1)) return "<invalid>";
  if (d < absl::ZeroDuration()) return "0s";
  const int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < 60 * 2) return absl::StrCat(seconds, "s");
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? absl::StrCat(minutes, "m") : absl::StrCat(minutes, "m", s, "s");
  }
  if (minutes < 60 * 3) return absl::StrCat(minutes, "m");
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? absl::StrCat(hours, "h") : absl::StrCat(hours, "h", m, "m");
  }
  if (hours < 48) return absl::StrCat(hours, "h");
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? absl::StrCat(hours / 24, "d") : absl::StrCat(hours / 24, "d", h, "h");
  }
  if (hours < 24 * 365 * 2) return absl::StrCat(hours / 24, "d");
  if (hours < 24 * 365 * 8) {
    const int64_t days = (hours / 24) % 365;
    return days == 0 ? absl::StrCat(hours / 24 / 365, "y")
                     : absl::StrCat(hours / 24 / 365, "y", days, "d");
  }
  return absl::StrCat(hours / 24 / 365, "y");
}

std::string TimeText(absl::Time t) {
  if (t == absl::InfinitePast()) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace booster::plugin
