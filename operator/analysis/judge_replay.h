// A recorded step judged look by look as the operator judges it, for booster-judge --replay:
// the step starts at the earliest window's start, and each look is the request the rollout
// state machine would make at that time, judged through the operator's own JudgeLook (the
// look's index and budget from LookFor, only the windows that ended by its interval
// boundary). Pure: the same input gives the same looks.
//
//   absl::StatusOr<JudgeInput> in = ParseJudgeInput(text, {.replay = true});
//   StepReplay r = ReplayStep(*in);
//   if (r.first_fail) std::cout << "rolled back at +" << r.looks[*r.first_fail].at;
#ifndef BOOSTER_OPERATOR_ANALYSIS_JUDGE_REPLAY_H_
#define BOOSTER_OPERATOR_ANALYSIS_JUDGE_REPLAY_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/analysis/judge.h"
#include "operator/analysis/judge_json.h"

namespace booster::analysis {

struct ReplayLook {
  Look look;
  absl::Duration at;   // from the step's start
  int extensions = 0;  // granted before this look
  Decision decision;
};

struct StepReplay {
  absl::Time step_start = absl::UnixEpoch();
  int looks_per_step = 1;  // LooksPerStep(analysis, stepDuration)
  int planned = 1;         // PlannedLooks(analysis, steps, stepDuration)
  // In time order, up to the look that ends the step as the operator would end it: a Fail
  // (roll back), a Pass at the step's end (advance), an Inconclusive with no extension
  // left (onInconclusive). An Inconclusive with an extension left extends the step by
  // stepDuration, as the state machine does, and the looks go on.
  std::vector<ReplayLook> looks;
  std::optional<size_t> first_fail;  // index into looks; only ever the last
};

// The looks of one step of input.step_duration, the first at one interval after the step
// starts, then at every interval boundary and at the step's end (extensions included) when
// that falls between boundaries: the times at which JudgeVerdictSource asks to be rechecked.
StepReplay ReplayStep(const JudgeInput& input, const JudgeOptions& options = JudgeOptions());

// The last look's decision as DecisionToJson writes it ({"verdict", "reason", "message",
// "metrics"}), then "stepStart" (seconds, as the input's times), "stepDuration",
// "interval", "steps", "looksPerStep", "plannedLooks", "looks": [{"look", "at" (seconds
// from the step's start), "stepOver", "extensions", "verdict", "reason", "message"}] and
// "firstFail": {"look", "at"} or null.
nlohmann::ordered_json ReplayToJson(const JudgeInput& input, const StepReplay& replay);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_JUDGE_REPLAY_H_
