// The search as the operator runs it: before each pass of the rollout state machine,
// DriveSearch reads status.search, ends the running trial when its rollout has ended
// (Promoted: kept; RolledBack: not kept), starts the next one, and hands the state
// machine the profile it should roll out: the profile's spec with the running trial's
// tuning and the objective required to improve. Pure: (profile, time) -> (profile, Events);
// status.search carries the whole state, so an operator killed at any point resumes the
// search where it stopped (the running trial's rollout resumes as any rollout does).
//
//   SearchPass pass = DriveSearch(profile, now);
//   Plan plan = rollout::Reconcile(pass.profile, obs, verdicts, now, options);
//   plan.status_changed |= plan.status.search != profile.status.search;
//
// The phases of status.search (docs/search.md):
// - Base: the profile's own spec.tuning goes out first as a plain rollout (no objective),
//   unless the target already runs it (promoted, or the default tuning on a target this
//   profile never tuned). Promoted: the search starts from it. Rolled back: Done
//   (BaseRolledBack), nothing is searched.
// - Searching: one trial at a time (search.h: the best so far + one change, judged against
//   the best so far, which the target runs as the baseline arm). A trial ends when the
//   rollout of its tuning reaches Promoted (kept, the new best) or RolledBack (not kept: the
//   target is back on the best). Failed (a conflict, a missing target) ends nothing: the
//   rollout resumes once the cause is gone.
// - Done: MaxTrials, Exhausted, BaseRolledBack. The state machine keeps the last rollout's
//   tuning, so nothing restarts: the target runs the best (promoted by the last kept trial,
//   or given back by the last rollback).
// A change of spec.search (but maxTrials: raised, a search it ended goes on) or spec.tuning
// starts the search again from the new tuning;
// removing spec.search stops it (phase Stopped, the table kept) and the profile's own
// tuning is rolled out as usual.
#ifndef BOOSTER_OPERATOR_SEARCH_DRIVER_H_
#define BOOSTER_OPERATOR_SEARCH_DRIVER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/rollout/profile/types.h"
#include "operator/search/search.h"

namespace booster::search {

inline constexpr char kPhaseBase[] = "Base";
inline constexpr char kPhaseSearching[] = "Searching";
inline constexpr char kPhaseDone[] = "Done";
inline constexpr char kPhaseStopped[] = "Stopped";

// An Event on the profile: SearchStarted, TrialStarted, TrialSkipped, TrialKept,
// TrialNotKept, SearchDone, BaseRolledBack (Warning), SearchStateInvalid (Warning).
struct SearchEvent {
  bool warning = false;
  std::string reason;
  std::string message;
};

struct SearchPass {
  rollout::Profile profile;  // status.search updated; spec as the state machine should see it
  std::vector<SearchEvent> events;
};

// Why a trial's tuning (TuningToJson's object) would change nothing against the best so far
// for the program the target runs ("" = it may change something). The operator's checks
// GOMAXPROCS against the Go version the agents read (operator/rollout/go_facts.h).
using NoOpCheck = std::function<std::string(const Json& best, const Json& trial_tuning)>;

// `no_op` (may be empty) is asked before a trial starts; a candidate it names is recorded in
// status.search.skipped with why (Event TrialSkipped), is no trial, and the next is tried.
SearchPass DriveSearch(const rollout::Profile& profile, absl::Time now,
                       const NoOpCheck& no_op = nullptr);

// The spec a trial rolls out: `spec` with `tuning` (TuningToJson's object) and the
// objective metric required to improve by minImprovementPercent (added as a required metric
// when the analysis does not list it), and onInconclusive Rollback: a trial that did not
// show the gain is not kept. kInvalidArgument when `tuning` is no valid tuning.
absl::StatusOr<rollout::ProfileSpec> TrialSpec(const rollout::ProfileSpec& spec,
                                               const Json& tuning);

// The search's pure spec of the profile's spec.search.
SearchSpec CoreSpec(const rollout::SearchSpec& spec);

// "runtime.go.gogc = 400": a trial's change as a person reads it.
std::string DescribeChange(const Trial& trial);

}  // namespace booster::search

#endif  // BOOSTER_OPERATOR_SEARCH_DRIVER_H_
