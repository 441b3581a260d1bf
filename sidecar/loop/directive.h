// Directives: what the operator asks this agent to do (profile generation, arm, and the
// tuning). They come from the operator's stream (OperatorDirectives,
// feedback/operator_directive_source.h) or, without an operator, from a local file the agent polls;
// DirectiveSource is the seam. The stream's settings use the file's keys. The file format
// is `key = value` lines, `#` comments:
//
//   generation = 3
//   action = apply            # apply | rollback | observe
//   arm = canary
//   placement = pinned        # none | spread | whole-cores | pinned (true = spread)
//   numa = align              # none | preferred | align | bind
//   cross_numa = false
//   migrate_memory = false    # move pages onto the planned NUMA nodes
//   sysctl.net.core.somaxconn = 4096
//   runtime.listen_backlog = 4096      # libbooster.so control page
//   runtime.tcp_nodelay = true
//   runtime.thread_placement = pin     # pin | confine | off
//   runtime.numa_mempolicy = preferred # preferred | bind | off
#ifndef BOOSTER_SIDECAR_LOOP_DIRECTIVE_H_
#define BOOSTER_SIDECAR_LOOP_DIRECTIVE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/include/booster/control.h"
#include "sidecar/plan/planner.h"

namespace booster::agent {

// cpu.placement of the profile, applied from outside to every thread of the targets
// (docs/agent.md "Placement in the pod"): spread and whole-cores confine each thread to
// the plan's CPUs (one hardware thread per core first / the fewest cores), pinned puts
// each thread on one CPU of the plan, round-robin.
enum class PlacementMode { kNone, kSpread, kWholeCores, kPinned };
// cpu.numa of the profile: which nodes the plan may span and where memory goes.
enum class NumaMode { kNone, kPreferred, kAlign, kBind };

const char* PlacementModeName(PlacementMode m);
const char* NumaModeName(NumaMode m);

struct Directive {
  enum class Action { kObserve, kApply, kRollback };
  int64_t generation = 0;
  Action action = Action::kObserve;
  std::string arm = "baseline";
  PlacementMode placement = PlacementMode::kNone;
  NumaMode numa = NumaMode::kNone;
  bool migrate_memory = false;
  PlacementPolicy policy;
  std::vector<std::pair<std::string, std::string>> sysctls;  // in file order
  bool runtime = false;    // any runtime.* key: publish a control page
  booster_control page{};  // features and values; the CPU list is filled from the plan
  // The setting keys as given ("placement", "sysctl.net.core.somaxconn", ...), in order:
  // the knobs an Applied reports on. Not generation, action or arm.
  std::vector<std::string> keys;
};

const char* ActionName(Directive::Action a);

// kInvalidArgument with the line number for unknown keys, bad values, and sysctls
// outside the namespaced allowlist.
absl::StatusOr<Directive> ParseDirective(absl::string_view text);

// Sets one tuning setting (any key of the file format but generation, action and arm) on
// `d` and records its key; the file parser and the operator's stream share it.
// kInvalidArgument saying why, without a line number; kNotFound for a key that is not a
// setting this agent knows.
absl::Status SetDirectiveSetting(absl::string_view key, absl::string_view value, Directive* d);

// Where directives come from.
class DirectiveSource {
 public:
  virtual ~DirectiveSource() = default;
  // A directive with a higher generation than the last one returned, if any.
  virtual absl::StatusOr<std::optional<Directive>> Poll() = 0;
};

// Polls a file; a missing file means "no directive yet".
class FileDirectiveSource : public DirectiveSource {
 public:
  explicit FileDirectiveSource(std::string path) : path_(std::move(path)) {}
  absl::StatusOr<std::optional<Directive>> Poll() override;

 private:
  std::string path_;
  std::string last_text_;
  int64_t last_generation_ = -1;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_LOOP_DIRECTIVE_H_
