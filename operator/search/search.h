// The tuning search: which trial comes next, and what a trial's outcome makes of the best
// tuning so far. Pure: no I/O, no clock; the caller runs each trial as a canary of
// `Trial::tuning` against `Trial::baseline` and reports how it ended. The operator runs it
// through driver.h (spec.search, status.search).
//
//   SearchState state = StartSearch(spec, current_tuning_json);
//   while (std::optional<Trial> t = NextTrial(spec, state)) {     // after a restart: the
//     if (!t->running) state = *AppendTrial(spec, state, *t);     // running trial again
//     TrialOutcome o = RunCanary(t->baseline, t->tuning);
//     state = *RecordOutcome(state, o);
//   }
//   // state.best: the tuning every kept trial improved on, state.trials: the table.
//
// Rules:
// - One change at a time: a trial is the best tuning so far with one knob set to one
//   candidate value, judged against the best tuning so far as its baseline. A kept trial
//   (the judge promoted it: the objective improved by minImprovementPercent at confidence
//   and no guardrail regressed) becomes the new best; any other outcome leaves the best as
//   it was.
// - Knobs are tried one after another, the likeliest wins first (KnobPriority: the listen
//   backlog, then the Go GC, the allocator, GOMAXPROCS, CPU placement, the rest), each
//   knob's values in the order given. A value that is not kept and did no better on the
//   objective than the knob's previous trial (or than the baseline, for the knob's first
//   value; a trial without an objective figure counts as worse) ends that knob's line.
// - A value equal (as JSON) to the best's value at that knob is no change and is skipped, and
//   so is a value the caller found changes nothing for this program (SkipValue, e.g. a
//   GOMAXPROCS that Go already runs with): neither is a trial, neither counts to max_trials.
// - Where a trial stands is derived from the trial table alone, never from a cursor kept
//   beside it, so the table is the whole state.
// - At most `max_trials` trials. The running trial is part of the state, so a restarted
//   operator resumes it instead of starting another one.
#ifndef BOOSTER_OPERATOR_SEARCH_SEARCH_H_
#define BOOSTER_OPERATOR_SEARCH_SEARCH_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace booster::search {

using Json = nlohmann::json;

// One knob's candidate values. `path` is a JSON pointer into the tuning object of
// TuningToJson ("/runtime/go/gogc", "/sysctls/net.core.somaxconn").
struct KnobCandidates {
  std::string path;
  std::vector<Json> values;
};

struct SearchSpec {
  std::vector<KnobCandidates> knobs;
  std::string objective;  // the metric the search improves ("latencyP99", "cpuPerRequest")
  double min_improvement_percent = 5;
  int max_trials = 8;
};

enum class TrialResult {
  kKept,        // promoted: becomes the best
  kRolledBack,  // the judge did not promote it (Fail, Inconclusive, a guardrail)
  kFailed,      // it never got judged (not ready, OOM-killed, refused)
};

struct TrialOutcome {
  TrialResult result = TrialResult::kRolledBack;
  // The objective's change against the trial's baseline in percent, positive = better
  // (direction adjusted); unset when the judge gave none.
  std::optional<double> objective_improvement_percent;
  std::string reason;   // why it ended ("MetricsPassed", "AnalysisFailed", "Inconclusive", ...)
  std::string message;  // the rollout's own words on how it ended
};

struct Trial {
  int number = 0;  // 1-based
  std::string knob;
  Json value;
  Json baseline;  // the best tuning when the trial started
  Json tuning;    // baseline with knob = value
  std::optional<TrialOutcome> outcome;  // unset while it runs
  bool running = false;  // NextTrial: this is the state's running trial, not a new one
  // Carried for the caller, not read here: when the trial started (RFC 3339), the
  // objective's latest change the judge showed while it ran (positive = better), and why
  // its rollout is being rolled back, once it is.
  std::string started;
  std::optional<double> objective_so_far;
  std::string rollback_reason;
};

// A candidate value that would change nothing, and why.
struct SkippedValue {
  std::string knob;
  Json value;
  std::string reason;
  bool operator==(const SkippedValue&) const = default;
};

struct SearchState {
  Json best;                 // the tuning every kept trial improved on
  std::vector<Trial> trials;  // in order; the last one may be running
  std::vector<SkippedValue> skipped;
};

// The knobs in the order they are tried: by KnobPriority, then as the spec lists them.
std::vector<KnobCandidates> OrderedKnobs(const SearchSpec& spec);
// Lower first: the listen backlog 0, the Go GC 1, the allocator 2, GOMAXPROCS 3, CPU
// placement 4, anything else 5.
int KnobPriority(const std::string& path);

SearchState StartSearch(const Json& tuning);

// The trial to run now: the running one if there is one, else the next candidate (which
// the caller starts with AppendTrial), or nullopt once the search is over (WhyDone says why).
std::optional<Trial> NextTrial(const SearchSpec& spec, const SearchState& state);
// Why no trial is left: "MaxTrials", "Exhausted"; empty while one is.
std::string WhyDone(const SearchSpec& spec, const SearchState& state);

// Starts `trial` (from NextTrial): appends it as the running trial. A trial whose baseline
// is not the state's best, or that is not the next candidate, is refused.
absl::StatusOr<SearchState> AppendTrial(const SearchSpec& spec, SearchState state, Trial trial);

// Records that NextTrial's candidate `trial` changes nothing (`reason`), so NextTrial
// passes over it. Refused while a trial runs, or for a trial that is not the next candidate.
absl::StatusOr<SearchState> SkipValue(const SearchSpec& spec, SearchState state,
                                      const Trial& trial, std::string reason);

// Ends the running trial with `outcome`: a kept trial's tuning becomes the best. Refused
// when no trial runs.
absl::StatusOr<SearchState> RecordOutcome(SearchState state, const TrialOutcome& outcome);

// status.search: the state as JSON and back (the trial table included), so a restarted
// operator resumes where it stopped.
Json SearchStateToJson(const SearchState& state);
absl::StatusOr<SearchState> SearchStateFromJson(const Json& j);

}  // namespace booster::search

#endif  // BOOSTER_OPERATOR_SEARCH_SEARCH_H_
