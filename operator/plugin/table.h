// Plain-text output of kubectl-booster, shaped like kubectl's: tables with an upper-case
// header and columns separated by three spaces (kubectl's tabwriter padding), and ages
// as kubectl prints them ("45s", "6m", "3h12m", "2d"). Pure.
//
//   std::cout << RenderTable({"NAME", "PHASE"}, {{"web", "Promoted"}});
//   HumanDuration(absl::Minutes(6));  // "6m"
#ifndef BOOSTER_OPERATOR_PLUGIN_TABLE_H_
#define BOOSTER_OPERATOR_PLUGIN_TABLE_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace booster::plugin {

// Header and rows, each column left-aligned to its widest cell, three spaces between
// columns, no trailing blanks, one line per row ending in '\n'. A row shorter than the
// header is padded with empty cells. Empty header: the rows alone.
std::string RenderTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// k8s.io/apimachinery's duration.HumanDuration: "<invalid>" for a negative duration of
// more than a second, then seconds below 2 minutes, "XmYs" below 10 minutes, minutes
// below 3 hours, "XhYm" below 8 hours, hours below 2 days, "XdYh" below 8 days, days
// below 2 years, "XyYd" below 8 years, years.
std::string HumanDuration(absl::Duration d);

// "2026-12-01T10:04:05Z", or "-" for an unset time (absl::InfinitePast()).
std::string TimeText(absl::Time t);

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_TABLE_H_
