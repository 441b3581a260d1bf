// booster-judge: the operator's canary judge on JSON, so a past canary can be replayed.
//
//   booster-judge < canary.json
//
// stdin: {"analysis": {...spec.rollout.analysis...}, "baseline": {"latencyP99": [0.051, ...]},
// "canary": {...}}, one value per window. stdout: the decision as JSON (docs/analysis.md).
// One look with the whole 1 - confidence budget; the step is considered over, so missing
// data is Inconclusive. Exit 0 with a decision, 2 on malformed input (why on stderr).
#include <iostream>
#include <iterator>
#include <string>

#include "operator/analysis/judge_json.h"

int main(int argc, char** /*argv*/) {
  if (argc > 1) {
    std::cerr << "usage: booster-judge < input.json\n"
                 "  input: {\"analysis\": {...}, \"baseline\": {metric: [values]}, "
                 "\"canary\": {metric: [values]}}\n";
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<booster::analysis::JudgeInput> input = booster::analysis::ParseJudgeInput(text);
  if (!input.ok()) {
    std::cerr << "booster-judge: " << input.status().message() << "\n";
    return 2;
  }
  const booster::analysis::Decision decision = booster::analysis::JudgeOnce(*input);
  std::cout << booster::analysis::DecisionToJson(decision).dump(2) << "\n";
  return 0;
}
