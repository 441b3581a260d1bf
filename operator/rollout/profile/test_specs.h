// Specs that more than one test of this folder parses (test code only; no library has it).
// Includes nothing.
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_TEST_SPECS_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_TEST_SPECS_H_

namespace booster::rollout::testing {

// The exact shape from the issue, which users will type.
inline constexpr char kIssueExample[] = R"json({
  "targetRef": {"kind": "Deployment", "name": "checkout"},
  "tuning": {
    "cpu": {"placement": "whole-cores", "numa": "align"},
    "sysctls": {"net.core.somaxconn": "4096", "net.ipv4.tcp_tw_reuse": "1"},
    "runtime": {
      "go": {"gomaxprocs": "auto", "gomemlimit": "auto"},
      "preload": {"listenBacklog": 4096, "tcpNoDelay": true, "allocator": "jemalloc"}
    }
  },
  "rollout": {"steps": [10, 50, 100], "stepDuration": "2m"}
})json";

}  // namespace booster::rollout::testing

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_TEST_SPECS_H_
