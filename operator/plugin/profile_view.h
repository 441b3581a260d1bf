// What `get` and `status` print about BoosterProfiles, from the objects as the API server
// returns them: the rows of `get`, the state block of `status`, and the step history,
// which the status does not keep (it holds only the last transition and the last
// decision) and is therefore rebuilt from the profile's Events, one per transition and
// per step verdict (docs/crd.md, "Events"). Pure.
//
//   std::vector<std::string> row = GetRow(profile, absl::Now(), /*wide=*/false);
//   std::vector<HistoryEntry> h = BuildHistory(profile, events_list["items"]);
#ifndef BOOSTER_OPERATOR_PLUGIN_PROFILE_VIEW_H_
#define BOOSTER_OPERATOR_PLUGIN_PROFILE_VIEW_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace booster::plugin {

using Json = nlohmann::json;

// Columns of `get`: NAME TARGET PHASE STEP WEIGHT VERDICT AGE, NAMESPACE first with -A,
// CANARY and REASON added by -o wide.
std::vector<std::string> GetHeader(bool all_namespaces, bool wide);
std::vector<std::string> GetRow(const Json& profile, absl::Time now, bool all_namespaces,
                                bool wide);

// One line of the step history.
struct HistoryEntry {
  absl::Time time = absl::InfinitePast();  // when it first happened
  absl::Time last = absl::InfinitePast();  // when it last happened (count > 1)
  int count = 1;
  std::string type;     // "Normal", "Warning"
  std::string reason;   // StepStarted, StepPassed, AnalysisFailed, Promoted, RolledBack, ...
  int step = 0;         // the step the event is about, 0 when it names none
  std::string verdict;  // Pass, Fail, Inconclusive for a step verdict, else ""
  std::string message;
  std::string key;  // identifies the Event and its count, for -w
};

// The profile's Events (items of an Event list, any order; Events of another object,
// or of an earlier profile of the same name, are left out by uid) as history entries,
// oldest first.
std::vector<HistoryEntry> BuildHistory(const Json& profile, const Json& events);

// The verdict a step-verdict event reason carries: StepPassed -> Pass, AnalysisFailed ->
// Fail, StepExtended / AnalysisInconclusive / InconclusiveAccepted -> Inconclusive.
std::string VerdictOfReason(const std::string& reason);
// The first "step N" of an event message, 0 if none.
int StepOfMessage(const std::string& message);

// History lines with a fixed layout, so -w can print new ones under the first ones.
std::string HistoryHeader();
std::string HistoryLine(const HistoryEntry& entry);

// The whole `status` output: the state block, the conditions, the history.
std::string RenderStatus(const Json& profile, const std::vector<HistoryEntry>& history,
                         absl::Time now);

// Whether the rollout is over (Promoted, RolledBack, Failed): `status -w` ends there.
bool RolloutEnded(const Json& profile);

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_PROFILE_VIEW_H_
