// booster-judge: the operator's canary judge on JSON, so a past canary can be replayed.
//
//   booster-judge < canary.json
//   booster-judge --replay [--step-duration 4m] < recording.json
//
// stdin: {"analysis": {...spec.rollout.analysis...}, "baseline": {"latencyP99": [0.051, ...]},
// "canary": {...}}, one value or one window object ({"pod", "start", "end", "value", ...})
// per window. stdout: JSON (docs/analysis.md). Without --replay: one decision, one look with
// the whole 1 - confidence budget; the step is considered over, so missing data is
// Inconclusive. With --replay: the step's looks in time order as the operator takes them,
// up to the one that ends the step (a Fail stops it: the operator would roll back), and a
// summary. Exit 0 with decisions, 2 on malformed input or arguments (why on stderr).
#include <iostream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "operator/analysis/judge_json.h"
#include "operator/analysis/judge_replay.h"

namespace {

constexpr char kUsage[] =
    "usage: booster-judge [--replay [--step-duration 2m]] < input.json\n"
    "  input: {\"analysis\": {...}, \"baseline\": {metric: [windows]}, \"canary\": {...},\n"
    "          \"stepDuration\": \"2m\", \"steps\": 1}\n"
    "  a window: a value, or {\"pod\": ..., \"start\": s, \"end\": s, \"value\": ...,\n"
    "            \"node\": ..., \"requests\": n, \"podStart\": s}\n"
    "  --replay             judge the step look by look as the operator does\n"
    "  --step-duration D    the step's duration (overrides stepDuration; default 2m)\n";

int Usage(absl::string_view why) {
  std::cerr << "booster-judge: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  booster::analysis::JudgeInputOptions options;
  bool step_flag = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--replay") {
      options.replay = true;
    } else if (arg == "--step-duration" || absl::StartsWith(arg, "--step-duration=")) {
      if (arg == "--step-duration") {
        if (++i == argc) return Usage("--step-duration needs a duration, e.g. 4m");
        options.step_duration = argv[i];
      } else {
        options.step_duration = std::string(arg.substr(sizeof("--step-duration=") - 1));
      }
      if (options.step_duration.empty()) {
        return Usage("--step-duration needs a duration, e.g. 4m");
      }
      step_flag = true;
    } else {
      return Usage(absl::StrCat("unknown argument ", arg));
    }
  }
  if (step_flag && !options.replay) return Usage("--step-duration needs --replay");
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<booster::analysis::JudgeInput> input =
      booster::analysis::ParseJudgeInput(text, options);
  if (!input.ok()) {
    std::cerr << "booster-judge: " << input.status().message() << "\n";
    return 2;
  }
  if (options.replay) {
    const booster::analysis::StepReplay replay = booster::analysis::ReplayStep(*input);
    std::cout << booster::analysis::ReplayToJson(*input, replay).dump(2) << "\n";
    return 0;
  }
  const booster::analysis::Decision decision = booster::analysis::JudgeOnce(*input);
  std::cout << booster::analysis::DecisionToJson(decision).dump(2) << "\n";
  return 0;
}
