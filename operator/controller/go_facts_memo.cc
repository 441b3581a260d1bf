#include "operator/controller/go_facts_memo.h"

#include <utility>

namespace booster::controller {

std::optional<rollout::GoFacts> GoFactsMemo::Resolve(const std::string& key,
                                                     const std::string& program,
                                                     std::optional<rollout::GoFacts> live) {
  std::lock_guard<std::mutex> l(mu_);
  if (live.has_value() && !live->version.empty()) {
    known_[key] = Known{program, *live};
    return live;
  }
  auto it = known_.find(key);
  if (it != known_.end() && it->second.program == program) return it->second.facts;
  return live;
}

void GoFactsMemo::Forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  known_.erase(key);
}

}  // namespace booster::controller
