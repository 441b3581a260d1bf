// The JSON the agent writes (`topology --json`, `plan --json`, the JSON-lines reports) is
// built as nlohmann::ordered_json, so an object's keys come out in the order they were set —
// the order docs/agent.md shows and the tests that read the lines rely on — and written by
// JsonLine: compact, on one line, numbers as nlohmann writes them (a non-finite double as
// null), and a string holding invalid UTF-8 (a process name, bytes read from a file) with
// U+FFFD in place of the bad bytes instead of an exception.
//
//   nlohmann::ordered_json j;
//   j["cpus"] = std::vector<int>{0, 1};
//   j["gomaxprocs"] = 2;
//   JsonLine(j);   // {"cpus":[0,1],"gomaxprocs":2}
#ifndef BOOSTER_SIDECAR_BASE_JSON_LINE_H_
#define BOOSTER_SIDECAR_BASE_JSON_LINE_H_

#include <string>

#include "nlohmann/json.hpp"

namespace booster::agent {

inline std::string JsonLine(const nlohmann::ordered_json& j) {
  return j.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_BASE_JSON_LINE_H_
