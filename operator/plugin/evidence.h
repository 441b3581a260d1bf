// `explain`: the evidence behind a profile's last verdict (status.lastDecision) as a table.
// The metrics judge writes, per metric, "<metric>.baseline" and "<metric>.canary" as
// "n=<windows> median=<value>", "<metric>.changePercent", "<metric>.pValue" and
// "<metric>.verdict", plus "judge", "alpha" and "look" (operator/analysis/
// judge_verdict_source.cc); the time source writes "judge: time", "observed" and
// "required" (operator/rollout/verdict.cc). A profile in dry run (spec.rollout.analysis.dryRun)
// says so, and a verdict dry run kept from rolling back (status.lastDecision.dryRun) says what
// it would have done. A profile with a search (status.search) gets the search's phase and
// its trial table first (RenderSearch). Pure.
//
//   std::cout << RenderExplain(profile_json);
#ifndef BOOSTER_OPERATOR_PLUGIN_EVIDENCE_H_
#define BOOSTER_OPERATOR_PLUGIN_EVIDENCE_H_

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace booster::plugin {

struct MetricEvidence {
  std::string metric;
  std::string baseline_windows = "-";
  std::string baseline_median = "-";
  std::string canary_windows = "-";
  std::string canary_median = "-";
  std::string change = "-";  // "+5.2%", "-3%", "+inf%"
  std::string p_value = "-";
  std::string verdict = "-";
};

// One row per metric named in `evidence`, in the order of `order` (the profile's
// spec.rollout.analysis.metrics) and then alphabetically.
std::vector<MetricEvidence> MetricRows(const std::map<std::string, std::string>& evidence,
                                       const std::vector<std::string>& order = {});

// The search's part of `explain` for status.search (operator/search/driver.h): its phase,
// the best so far, and one row per trial (number, change, result, reason, the objective's
// change, "so far" while it runs). "" for no search.
std::string RenderSearch(const nlohmann::json& search);

// The whole `explain` output for a BoosterProfile object.
std::string RenderExplain(const nlohmann::json& profile);

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_EVIDENCE_H_
