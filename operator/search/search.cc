#include "operator/search/search.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace booster::search {
namespace {

using Pointer = Json::json_pointer;

bool SameValue(const Json& tuning, const std::string& path, const Json& value) {
  const Pointer p(path);
  return tuning.contains(p) && tuning.at(p) == value;
}

Json WithValue(Json tuning, const std::string& path, const Json& value) {
  tuning[Pointer(path)] = value;
  return tuning;
}

// Whether the knob's trials so far have ended its line: one not kept that did no better on
// the objective than the knob's previous trial (the baseline, 0, for the first and after a
// kept one).
bool LineEnded(const std::vector<Trial>& trials, const std::string& knob) {
  double previous = 0;
  for (const Trial& t : trials) {
    if (t.knob != knob || !t.outcome.has_value()) continue;
    const TrialOutcome& o = *t.outcome;
    if (o.result == TrialResult::kKept) {
      previous = 0;
      continue;
    }
    if (!o.objective_improvement_percent.has_value() || *o.objective_improvement_percent <= previous) {
      return true;
    }
    previous = *o.objective_improvement_percent;
  }
  return false;
}

// The next value of `knob` to try: after the last one tried, skipping no-changes.
std::optional<Json> NextValue(const KnobCandidates& knob, const SearchState& state) {
  if (LineEnded(state.trials, knob.path)) return std::nullopt;
  size_t from = 0;
  for (const Trial& t : state.trials) {
    if (t.knob != knob.path) continue;
    for (size_t i = 0; i < knob.values.size(); ++i) {
      if (knob.values[i] == t.value) from = std::max(from, i + 1);
    }
  }
  auto skipped = [&](const Json& v) {
    return std::any_of(state.skipped.begin(), state.skipped.end(), [&](const SkippedValue& s) {
      return s.knob == knob.path && s.value == v;
    });
  };
  for (size_t i = from; i < knob.values.size(); ++i) {
    if (!SameValue(state.best, knob.path, knob.values[i]) && !skipped(knob.values[i])) {
      return knob.values[i];
    }
  }
  return std::nullopt;
}

const Trial* Running(const SearchState& state) {
  if (state.trials.empty() || state.trials.back().outcome.has_value()) return nullptr;
  return &state.trials.back();
}

std::optional<Trial> NextCandidate(const SearchSpec& spec, const SearchState& state) {
  if (static_cast<int>(state.trials.size()) >= spec.max_trials) return std::nullopt;
  for (const KnobCandidates& knob : OrderedKnobs(spec)) {
    if (std::optional<Json> value = NextValue(knob, state)) {
      Trial t;
      t.number = static_cast<int>(state.trials.size()) + 1;
      t.knob = knob.path;
      t.value = *value;
      t.baseline = state.best;
      t.tuning = WithValue(state.best, knob.path, *value);
      return t;
    }
  }
  return std::nullopt;
}

const char* ResultName(TrialResult r) {
  switch (r) {
    case TrialResult::kKept:
      return "Kept";
    case TrialResult::kRolledBack:
      return "RolledBack";
    case TrialResult::kFailed:
      return "Failed";
  }
  return "Failed";
}

std::optional<TrialResult> ResultFromName(const std::string& name) {
  for (TrialResult r : {TrialResult::kKept, TrialResult::kRolledBack, TrialResult::kFailed}) {
    if (name == ResultName(r)) return r;
  }
  return std::nullopt;
}

}  // namespace

int KnobPriority(const std::string& path) {
  if (path == "/sysctls/net.core.somaxconn" || path == "/runtime/preload/listenBacklog") return 0;
  if (path == "/runtime/go/gogc" || path == "/runtime/go/gomemlimit") return 1;
  if (path == "/runtime/preload/allocator") return 2;
  if (path == "/runtime/go/gomaxprocs") return 3;
  if (absl::StartsWith(path, "/cpu/")) return 4;
  return 5;
}

std::vector<KnobCandidates> OrderedKnobs(const SearchSpec& spec) {
  std::vector<KnobCandidates> knobs = spec.knobs;
  std::stable_sort(knobs.begin(), knobs.end(), [](const KnobCandidates& a, const KnobCandidates& b) {
    return KnobPriority(a.path) < KnobPriority(b.path);
  });
  return knobs;
}

SearchState StartSearch(const Json& tuning) {
  SearchState s;
  s.best = tuning;
  return s;
}

std::optional<Trial> NextTrial(const SearchSpec& spec, const SearchState& state) {
  if (const Trial* running = Running(state)) {
    Trial t = *running;
    t.running = true;
    return t;
  }
  return NextCandidate(spec, state);
}

std::string WhyDone(const SearchSpec& spec, const SearchState& state) {
  if (NextTrial(spec, state).has_value()) return "";
  return static_cast<int>(state.trials.size()) >= spec.max_trials ? "MaxTrials" : "Exhausted";
}

absl::StatusOr<SearchState> AppendTrial(const SearchSpec& spec, SearchState state, Trial trial) {
  if (Running(state) != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", state.trials.back().number, " is still running"));
  }
  std::optional<Trial> next = NextCandidate(spec, state);
  if (!next.has_value()) return absl::FailedPreconditionError("the search is over");
  if (trial.baseline != state.best) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", trial.number, " was planned on another baseline than the best"));
  }
  if (trial.number != next->number || trial.knob != next->knob || trial.value != next->value ||
      trial.tuning != next->tuning) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", trial.number, " (", trial.knob, " = ", trial.value.dump(),
                     ") is not the next candidate (", next->knob, " = ", next->value.dump(), ")"));
  }
  trial.outcome.reset();
  trial.running = false;
  state.trials.push_back(std::move(trial));
  return state;
}

absl::StatusOr<SearchState> SkipValue(const SearchSpec& spec, SearchState state,
                                      const Trial& trial, std::string reason) {
  if (Running(state) != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", state.trials.back().number, " is still running"));
  }
  std::optional<Trial> next = NextCandidate(spec, state);
  if (!next.has_value() || next->knob != trial.knob || next->value != trial.value) {
    return absl::FailedPreconditionError(
        absl::StrCat(trial.knob, " = ", trial.value.dump(), " is not the next candidate"));
  }
  state.skipped.push_back({trial.knob, trial.value, std::move(reason)});
  return state;
}

absl::StatusOr<SearchState> RecordOutcome(SearchState state, const TrialOutcome& outcome) {
  if (Running(state) == nullptr) return absl::FailedPreconditionError("no trial is running");
  Trial& t = state.trials.back();
  t.outcome = outcome;
  if (outcome.result == TrialResult::kKept) state.best = t.tuning;
  return state;
}

Json SearchStateToJson(const SearchState& state) {
  Json j;
  j["best"] = state.best;
  j["trials"] = Json::array();
  for (const Trial& t : state.trials) {
    Json tj = {{"number", t.number}, {"knob", t.knob}, {"value", t.value},
               {"baseline", t.baseline}, {"tuning", t.tuning}};
    if (!t.started.empty()) tj["started"] = t.started;
    if (t.objective_so_far.has_value()) tj["objectiveSoFarPercent"] = *t.objective_so_far;
    if (!t.rollback_reason.empty()) tj["rollbackReason"] = t.rollback_reason;
    if (t.outcome.has_value()) {
      tj["result"] = ResultName(t.outcome->result);
      tj["reason"] = t.outcome->reason;
      if (!t.outcome->message.empty()) tj["message"] = t.outcome->message;
      if (t.outcome->objective_improvement_percent.has_value()) {
        tj["objectiveImprovementPercent"] = *t.outcome->objective_improvement_percent;
      }
    }
    j["trials"].push_back(std::move(tj));
  }
  j["skipped"] = Json::array();
  for (const SkippedValue& s : state.skipped) {
    j["skipped"].push_back({{"knob", s.knob}, {"value", s.value}, {"reason", s.reason}});
  }
  return j;
}

absl::StatusOr<SearchState> SearchStateFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("best") || !j["best"].is_object()) {
    return absl::InvalidArgumentError("search state: best must be an object");
  }
  SearchState s;
  s.best = j["best"];
  const Json trials = j.value("trials", Json::array());
  if (!trials.is_array()) return absl::InvalidArgumentError("search state: trials must be a list");
  for (size_t i = 0; i < trials.size(); ++i) {
    const Json& tj = trials[i];
    if (!tj.is_object() || !tj.contains("knob") || !tj["knob"].is_string() ||
        !tj.contains("value") || !tj.contains("baseline") || !tj.contains("tuning")) {
      return absl::InvalidArgumentError(
          absl::StrCat("search state: trial ", i + 1, " needs knob, value, baseline and tuning"));
    }
    Trial t;
    t.number = tj.value("number", static_cast<int>(i) + 1);
    t.knob = tj["knob"].get<std::string>();
    t.value = tj["value"];
    t.baseline = tj["baseline"];
    t.tuning = tj["tuning"];
    if (tj.contains("started") && tj["started"].is_string()) t.started = tj["started"];
    if (tj.contains("rollbackReason") && tj["rollbackReason"].is_string()) {
      t.rollback_reason = tj["rollbackReason"];
    }
    if (tj.contains("objectiveSoFarPercent") && tj["objectiveSoFarPercent"].is_number()) {
      t.objective_so_far = tj["objectiveSoFarPercent"].get<double>();
    }
    if (tj.contains("result")) {
      const std::optional<TrialResult> r =
          tj["result"].is_string() ? ResultFromName(tj["result"].get<std::string>()) : std::nullopt;
      if (!r.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("search state: trial ", i + 1, " has an unknown result"));
      }
      TrialOutcome o;
      o.result = *r;
      o.reason = tj.value("reason", "");
      o.message = tj.value("message", "");
      if (tj.contains("objectiveImprovementPercent") &&
          tj["objectiveImprovementPercent"].is_number()) {
        o.objective_improvement_percent = tj["objectiveImprovementPercent"].get<double>();
      }
      t.outcome = o;
    } else if (i + 1 != trials.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("search state: trial ", i + 1, " has no result but is not the last"));
    }
    s.trials.push_back(std::move(t));
  }
  const Json skipped = j.value("skipped", Json::array());
  if (skipped.is_array()) {
    for (const Json& k : skipped) {
      if (!k.is_object() || !k.contains("value") || !k.value("knob", Json()).is_string()) continue;
      s.skipped.push_back({k["knob"].get<std::string>(), k["value"],
                           k.value("reason", Json("")).is_string() ? k.value("reason", "") : ""});
    }
  }
  return s;
}

}  // namespace booster::search
