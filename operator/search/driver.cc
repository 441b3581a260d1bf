#include "operator/search/driver.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/rollout/profile/hash.h"
#include "operator/rollout/profile/metric_names.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/search_spec.h"
#include "operator/rollout/profile/time_text.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::search {
namespace {

using rollout::Phase;
using rollout::ProfileSpec;
using rollout::RolloutStatus;

std::string Percent(double v) {
  if (std::isinf(v)) return v > 0 ? "infinitely" : "-infinitely";
  return absl::StrCat(std::round(std::fabs(v) * 10) / 10, "%");
}

// "cpuPerRequest 12.3% better".
std::string ObjectiveText(const std::string& objective, std::optional<double> improvement) {
  if (!improvement.has_value()) return absl::StrCat(objective, ": no figure");
  if (*improvement == 0) return absl::StrCat(objective, " unchanged");
  return absl::StrCat(objective, " ", Percent(*improvement), *improvement > 0 ? " better" : " worse");
}

// The objective's change in a decision's evidence, direction adjusted: positive = better.
std::optional<double> ObjectiveImprovement(const rollout::Decision& d, const std::string& objective) {
  auto it = d.evidence.find(objective + ".changePercent");
  if (it == d.evidence.end()) return std::nullopt;
  double change;
  if (it->second == "+inf") {
    change = std::numeric_limits<double>::infinity();
  } else if (it->second == "-inf") {
    change = -std::numeric_limits<double>::infinity();
  } else if (!absl::SimpleAtod(it->second, &change) || std::isnan(change)) {
    return std::nullopt;
  }
  return rollout::MetricDirection(objective) == rollout::Direction::kLowerIsBetter ? -change
                                                                                   : change;
}

// The last decision, when it was made at or after `since`.
const rollout::Decision* DecisionSince(const RolloutStatus& s, absl::Time since) {
  if (!s.last_decision.has_value() || s.last_decision->time < since) return nullptr;
  return &*s.last_decision;
}

// What starts the search again when it changes: the candidates, the objective and the
// tuning the search starts from (not maxTrials, which a search ended by it goes on from, nor
// the steps, the durations or the guardrails).
std::string SpecHash(const ProfileSpec& spec) {
  Json j;
  j["tuning"] = rollout::TuningToJson(spec.tuning);
  j["objective"] = spec.search->objective;
  j["minImprovementPercent"] = spec.search->min_improvement_percent;
  j["knobs"] = Json::array();
  for (const rollout::SearchKnob& k : spec.search->knobs) {
    j["knobs"].push_back({{"path", k.path}, {"values", k.values}});
  }
  return rollout::Fnv1aHex(j.dump());
}

// Whether the target already runs the profile's own tuning: promoted by this profile, or
// the default tuning on a target no rollout of this profile left tuned.
bool BaseInPlace(const RolloutStatus& s, const ProfileSpec& spec) {
  if (s.phase == Phase::kPromoted && s.rollout_hash == rollout::RolloutHash(spec)) return true;
  return rollout::TuningToJson(spec.tuning) == rollout::TuningToJson(rollout::Tuning{}) &&
         s.baseline_tuning.empty() && s.phase != Phase::kPromoting &&
         s.phase != Phase::kPromoted;
}

std::string ValueText(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// status.search with the core's state written into it, the phase's own fields kept.
void WriteState(Json& status, const SearchState& state) {
  const Json core = SearchStateToJson(state);
  for (auto it = core.begin(); it != core.end(); ++it) status[it.key()] = it.value();
}

void Finish(Json& status, const std::string& reason, const std::string& message) {
  status["phase"] = kPhaseDone;
  status["reason"] = reason;
  status["message"] = message;
}

std::string DoneMessage(const std::string& why, const SearchState& state,
                        const std::string& objective) {
  int kept = 0;
  const Trial* last_kept = nullptr;
  for (const Trial& t : state.trials) {
    if (t.outcome.has_value() && t.outcome->result == TrialResult::kKept) {
      ++kept;
      last_kept = &t;
    }
  }
  const std::string head =
      absl::StrCat(why == "MaxTrials" ? "maxTrials reached" : "every candidate tried", " after ",
                   state.trials.size(), " trial", state.trials.size() == 1 ? "" : "s", ", ",
                   kept, " kept",
                   state.skipped.empty()
                       ? std::string()
                       : absl::StrCat(", ", state.skipped.size(), " candidate",
                                      state.skipped.size() == 1 ? "" : "s",
                                      " skipped as changing nothing"));
  if (last_kept == nullptr) {
    return absl::StrCat(head, ": no trial showed ", objective,
                        " better than the profile's own tuning, which the target keeps");
  }
  return absl::StrCat(head, ": the best is trial ", last_kept->number, " (",
                      DescribeChange(*last_kept), "), which the target runs");
}

}  // namespace

SearchSpec CoreSpec(const rollout::SearchSpec& spec) {
  SearchSpec core;
  for (const rollout::SearchKnob& k : spec.knobs) core.knobs.push_back({k.path, k.values});
  core.objective = spec.objective;
  core.min_improvement_percent = spec.min_improvement_percent;
  core.max_trials = spec.max_trials;
  return core;
}

std::string DescribeChange(const Trial& trial) {
  return absl::StrCat(rollout::SearchKnobName(trial.knob), " = ", ValueText(trial.value));
}

absl::StatusOr<ProfileSpec> TrialSpec(const ProfileSpec& spec, const Json& tuning) {
  absl::StatusOr<rollout::Tuning> t = rollout::TuningFromJson(tuning);
  if (!t.ok()) return t.status();
  ProfileSpec out = spec;
  out.tuning = *t;
  if (!spec.search.has_value()) return out;
  rollout::AnalysisSpec& a = out.rollout.analysis;
  a.on_inconclusive = rollout::InconclusivePolicy::kRollback;
  bool listed = false;
  for (rollout::MetricSpec& m : a.metrics) {
    if (m.name != spec.search->objective) continue;
    m.min_improvement_percent = spec.search->min_improvement_percent;
    m.required = true;
    listed = true;
  }
  if (!listed) {
    a.metrics.push_back({.name = spec.search->objective,
                         .max_regression_percent = 0,
                         .min_improvement_percent = spec.search->min_improvement_percent,
                         .required = true});
  }
  return out;
}

SearchPass DriveSearch(const rollout::Profile& profile, absl::Time now, const NoOpCheck& no_op) {
  SearchPass pass{profile, {}};
  if (!profile.spec.ok()) return pass;
  const ProfileSpec& spec = *profile.spec;
  const RolloutStatus& rs = profile.status;
  Json& status = pass.profile.status.search;
  auto event = [&pass](bool warning, std::string reason, std::string message) {
    pass.events.push_back({warning, std::move(reason), std::move(message)});
  };

  if (!spec.search.has_value()) {
    if (status.is_object() && status.value("phase", "") != kPhaseStopped) {
      status["phase"] = kPhaseStopped;
      status["reason"] = "SearchRemoved";
      status["message"] = "spec.search was removed: the profile's own tuning is rolled out";
    }
    return pass;
  }
  const std::string& objective = spec.search->objective;
  const SearchSpec core = CoreSpec(*spec.search);
  const std::string hash = SpecHash(spec);
  if (!status.is_object() || status.value("specHash", "") != hash ||
      status.value("phase", "") == kPhaseStopped) {
    std::vector<std::string> knobs;
    for (const KnobCandidates& k : OrderedKnobs(core)) {
      knobs.push_back(rollout::SearchKnobName(k.path));
    }
    status = Json{{"specHash", hash},
                  {"phase", kPhaseBase},
                  {"objective", objective},
                  {"started", rollout::FormatRfc3339(now)}};
    WriteState(status, StartSearch(rollout::TuningToJson(spec.tuning)));
    event(false, "SearchStarted",
          absl::StrCat("searching ", absl::StrJoin(knobs, ", "), " for a better ", objective,
                       ": a trial is kept when it shows ", objective, " ",
                       spec.search->min_improvement_percent, "% better, at most ",
                       spec.search->max_trials, " trials"));
  }

  if (status.value("phase", "") == kPhaseBase) {
    if (BaseInPlace(rs, spec)) {
      status["phase"] = kPhaseSearching;
    } else {
      if (rs.phase == Phase::kRolledBack && rs.rollout_hash == rollout::RolloutHash(spec)) {
        const std::string msg = absl::StrCat(
            "the profile's own tuning, which the search starts from, was rolled back (",
            rs.last_transition ? rs.last_transition->message : "", "): nothing is searched; "
            "change spec.tuning (or leave it out) to search again");
        Finish(status, "BaseRolledBack", msg);
        event(true, "BaseRolledBack", msg);
      }
      return pass;  // the profile's own tuning goes out first, as a plain rollout
    }
  }
  if (status.value("phase", "") == kPhaseDone && status.value("reason", "") == "MaxTrials") {
    // maxTrials raised since: the search goes on from its table.
    absl::StatusOr<SearchState> ended = SearchStateFromJson(status);
    if (ended.ok() && NextTrial(core, *ended).has_value()) {
      status["phase"] = kPhaseSearching;
      status.erase("reason");
      status.erase("message");
    }
  }
  if (status.value("phase", "") != kPhaseSearching) {
    // Done: the last trial's rollout stays as it ended (the target runs the best).
    absl::StatusOr<SearchState> done = SearchStateFromJson(status);
    if (done.ok() && !done->trials.empty()) {
      absl::StatusOr<ProfileSpec> last = TrialSpec(spec, done->trials.back().tuning);
      if (last.ok()) pass.profile.spec = *last;
    }
    return pass;
  }

  absl::StatusOr<SearchState> state = SearchStateFromJson(status);
  if (!state.ok()) {
    const std::string msg =
        absl::StrCat("status.search cannot be read (", state.status().message(),
                     "): the search stops; change spec.search to start it again");
    Finish(status, "InvalidState", msg);
    event(true, "SearchStateInvalid", msg);
    return pass;
  }
  SearchState st = *std::move(state);

  // The running trial: has its rollout ended?
  if (!st.trials.empty() && !st.trials.back().outcome.has_value()) {
    Trial& t = st.trials.back();
    absl::StatusOr<ProfileSpec> trial_spec = TrialSpec(spec, t.tuning);
    if (!trial_spec.ok()) {
      const std::string msg = absl::StrCat("trial ", t.number, " has no valid tuning (",
                                           trial_spec.status().message(), "): the search stops");
      Finish(status, "InvalidState", msg);
      event(true, "SearchStateInvalid", msg);
      return pass;
    }
    const absl::Time started = rollout::ParseTimeOr(t.started, absl::InfinitePast());
    const bool ours = rs.rollout_hash == rollout::RolloutHash(*trial_spec) &&
                      rs.phase_start_time >= started;
    const rollout::Decision* decision = ours ? DecisionSince(rs, started) : nullptr;
    if (decision != nullptr) {
      if (std::optional<double> v = ObjectiveImprovement(*decision, objective)) {
        t.objective_so_far = v;
      }
    }
    if (ours && rs.phase == Phase::kRollingBack && rs.last_transition.has_value() &&
        rs.last_transition->to == rollout::PhaseName(Phase::kRollingBack)) {
      t.rollback_reason = rs.last_transition->reason;  // AnalysisFailed, OOMKilled, ...
    }
    if (ours && (rs.phase == Phase::kPromoted || rs.phase == Phase::kRolledBack)) {
      TrialOutcome o;
      o.objective_improvement_percent = t.objective_so_far;
      const std::string change = DescribeChange(t);
      if (rs.phase == Phase::kPromoted) {
        o.result = TrialResult::kKept;
        o.reason = decision != nullptr ? decision->reason : "Promoted";
        o.message = decision != nullptr ? decision->message : "";
        event(false, "TrialKept",
              absl::StrCat("trial ", t.number, " (", change, ") kept: ",
                           ObjectiveText(objective, o.objective_improvement_percent),
                           "; it is the best so far"));
      } else {
        o.result = TrialResult::kRolledBack;
        const bool judged = decision != nullptr && decision->verdict != "Pass";
        o.reason = !t.rollback_reason.empty() ? t.rollback_reason
                   : judged                   ? decision->reason
                                              : "RolledBack";
        o.message = rs.last_transition ? rs.last_transition->message : "";
        event(false, "TrialNotKept",
              absl::StrCat("trial ", t.number, " (", change, ") not kept (", o.reason, "): ",
                           ObjectiveText(objective, o.objective_improvement_percent),
                           "; the target is back on the best so far"));
      }
      st = *RecordOutcome(std::move(st), o);  // a trial runs: cannot fail
    }
  }

  // No trial running: start the next one, or finish.
  if (st.trials.empty() || st.trials.back().outcome.has_value()) {
    std::optional<Trial> next = NextTrial(core, st);
    while (next.has_value() && no_op) {
      std::string why = no_op(st.best, next->tuning);
      if (why.empty()) break;
      event(false, "TrialSkipped",
            absl::StrCat(DescribeChange(*next), " is not tried: ", why));
      st = *SkipValue(core, std::move(st), *next, std::move(why));  // NextTrial's: accepted
      next = NextTrial(core, st);
    }
    if (next.has_value()) {
      next->started = rollout::FormatRfc3339(now);
      event(false, "TrialStarted",
            absl::StrCat("trial ", next->number, ": ", DescribeChange(*next),
                         " against the best so far"));
      st = *AppendTrial(core, std::move(st), *std::move(next));  // NextTrial's own: accepted
    } else {
      const std::string why = WhyDone(core, st);
      const std::string msg = DoneMessage(why, st, objective);
      Finish(status, why, msg);
      event(false, "SearchDone", msg);
    }
  }
  WriteState(status, st);

  if (!st.trials.empty()) {
    // The running trial's rollout; once done, the last one's, which stays as it ended.
    absl::StatusOr<ProfileSpec> effective = TrialSpec(spec, st.trials.back().tuning);
    if (effective.ok()) pass.profile.spec = *effective;
  }
  return pass;
}

}  // namespace booster::search
