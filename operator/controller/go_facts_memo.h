// The Go facts of each profile's program, remembered while no agent reports them.
//
// The agents read the facts (Go version, CPUs, DefaultGODEBUG) from the pods they run in,
// and the operator forgets a pod's facts when its stream closes. Between two of the
// search's trials no pod may have a stream: the last trial's canary and baseline are gone
// and the target's new pods are not up yet, and the next candidate is chosen right then.
// The memo keeps the last known facts of a profile together with the program they were
// read from (rollout::ProgramKey: the template's images), and answers with them only while
// the target still runs that program. An operator restart forgets them: a candidate is then
// tried rather than skipped, never the reverse.
#ifndef BOOSTER_OPERATOR_CONTROLLER_GO_FACTS_MEMO_H_
#define BOOSTER_OPERATOR_CONTROLLER_GO_FACTS_MEMO_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "operator/rollout/go_facts.h"

namespace booster::controller {

class GoFactsMemo {
 public:
  // The facts to judge profile `key` by, whose target runs `program` now: `live` (what its
  // agents report) when it names a Go version, else the remembered facts of the same
  // program, else `live`. Live facts with a version are remembered for `program`.
  std::optional<rollout::GoFacts> Resolve(const std::string& key, const std::string& program,
                                          std::optional<rollout::GoFacts> live);
  // The profile is gone.
  void Forget(const std::string& key);

 private:
  struct Known {
    std::string program;
    rollout::GoFacts facts;
  };
  std::mutex mu_;
  std::map<std::string, Known> known_ ABSL_GUARDED_BY(mu_);
};

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_GO_FACTS_MEMO_H_
