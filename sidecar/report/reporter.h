// Reporting: what the agent tells the operator — Hello at start, Applied after every
// directive (and after start-up recovery / shutdown revert), one Report per window — and
// the Reporter seam the loop tells it through. JsonLinesReporter (json_lines_reporter.h)
// writes one JSON object per line to a file (or stdout); with an operator,
// FeedbackReporter (feedback/feedback_reporter.h) streams them over gRPC instead.
//
// A WindowRecord carries everything proto/booster/v1/agent.proto's WindowReport needs:
// (incarnation, sequence) identify it across reconnects, the per-metric values with their
// sample counts (a missing metric has no value), and who measured it.
// FeedbackWindowFromRecord (feedback/feedback_adapter.h) converts it.
#ifndef BOOSTER_SIDECAR_REPORT_REPORTER_H_
#define BOOSTER_SIDECAR_REPORT_REPORTER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sidecar/plan/planner.h"
#include "sidecar/sample/sampler.h"
#include "sidecar/sample/window_metrics.h"
#include "sidecar/topology/topology.h"

namespace booster::agent {

// Who the agent is and what it runs, as the agent believes it (the downward API and the
// operator's env in the pod; flags override). Informational for the operator, which takes
// identity from the agent's token and the live pod, never from a message.
struct AgentIdentity {
  std::string pod_namespace;
  std::string pod_name = "unknown";
  std::string pod_uid;
  std::string node_name;
  std::string profile;           // "namespace/name" of the BoosterProfile; "" outside one
  std::string arm = "baseline";  // baseline | canary | promoted; a directive may change it
  std::string mode = "observe";  // observe | tune (BOOSTER_AGENT_MODE)
  std::string template_hash;     // the pod's booster.dev/template-hash annotation
  std::string incarnation;       // random per agent process (NewIncarnation)
  std::string agent_version;
};

// 32 random hex digits from the kernel's random source, for AgentIdentity::incarnation.
std::string NewIncarnation();

// The machine and limits the agent found, for Hello (proto Topology).
struct TopologyInfo {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
  std::string cpuset;              // of the application's first process, "0-3,8"
  double cpu_quota_cores = 0;      // 0: no quota
  int64_t memory_limit_bytes = 0;  // 0: no limit
};

struct HelloInfo {
  AgentIdentity identity;
  TopologyInfo topology;
  std::string topology_summary;  // "2 CPUs, 2 cores, 1 NUMA node"
};

// One closed window, as reported.
struct WindowRecord {
  AgentIdentity identity;  // the arm in force when the window closed
  uint64_t sequence = 0;   // 1 for the first window of an incarnation, then +1
  int64_t generation = 0;  // of the last directive applied; 0 before any
  WindowReport report;     // the raw figures
  WindowMetrics metrics;   // ComputeWindowMetrics(report)
};

struct AppliedStatus {
  int64_t generation = 0;
  std::string arm;
  std::string action;  // apply, rollback, observe, recover, shutdown
  bool ok = true;
  std::vector<std::string> applied;  // human-readable, one per change
  std::vector<std::string> failed;   // why, one per failure
  // The directive's setting keys (Directive::keys) and, when it failed at one step, the
  // keys of that step ("placement", "sysctl.<name>", every "runtime.*", ...); empty when
  // the failure is not one setting's (no target, no plan, a revert that failed).
  std::vector<std::string> knobs;
  std::vector<std::string> failed_knobs;
  // How a knob took effect, per knob key, when there is more to say than "applied": for
  // placement and numa, which process it reached and how (libbooster.so's control page,
  // sched_setaffinity from outside, or not reached and why). Sent as the knob's reason.
  std::map<std::string, std::string> knob_notes;
  // Knobs of an applied directive that cannot act on the program, and why (for example
  // the socket knobs of a static binary, which never loads libbooster.so). Sent with the
  // outcome NOT_REACHABLE; the operator shows them in the profile's TuningReached.
  std::map<std::string, std::string> unreachable;
  std::vector<int> target_pids;
  std::optional<Plan> plan;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void Hello(const HelloInfo& info) = 0;
  virtual void Applied(const AppliedStatus& status) = 0;
  virtual void Report(const WindowRecord& record) = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_REPORT_REPORTER_H_
