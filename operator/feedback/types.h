// Plain C++ types of the agent feedback channel (docs/feedback.md), shared by the
// authorization core, the window store and the gRPC server. They mirror the messages of
// proto/booster/v1/agent.proto without depending on protobuf, so the operator's rollout
// and analysis code never sees a generated type.
//
//   std::optional<Arm> arm = ParseArm(labels["booster.dev/arm"]);   // baseline | canary
//   DirectiveSpec d{.generation = 3, .action = DirectiveAction::kApply,
//                   .settings = {{"sysctl.net.core.somaxconn", "4096"}}};
#ifndef BOOSTER_OPERATOR_FEEDBACK_TYPES_H_
#define BOOSTER_OPERATOR_FEEDBACK_TYPES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/rollout/profile/metric_names.h"

namespace booster::feedback {

// The audience the agents' projected tokens are minted for (pod_template.h mounts them
// with it) and the only one the operator accepts.
inline constexpr char kAudience[] = "booster-operator";

// The two arms of a canary. Pods carry it in the label booster.dev/arm.
enum class Arm { kBaseline = 0, kCanary = 1 };
inline constexpr int kArmCount = 2;
inline constexpr std::array<Arm, kArmCount> kArms = {Arm::kBaseline, Arm::kCanary};

// "baseline" / "canary".
absl::string_view ArmName(Arm arm);
// The arm named exactly `name`; nullopt for anything else ("promoted", "", "Canary").
std::optional<Arm> ParseArm(absl::string_view name);

// The metric names agents report are the BoosterProfile CRD's analysis metrics, from the
// one table of them (operator/rollout/profile/metric_names.h); a window's metrics are
// indexed by MetricIndex.
using rollout::IsKnownMetric;
using rollout::kMetricCount;
using rollout::kMetricNames;
using rollout::MetricIndex;

// Who an accepted agent is. Every field comes from the TokenReview and the live pod
// object, never from what the agent sends.
struct AgentIdentity {
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::string service_account;
  Arm arm = Arm::kBaseline;
  std::string profile;        // "namespace/name" of the BoosterProfile
  std::string owner;          // name of the pod's controlling ReplicaSet
  std::string template_hash;  // annotation booster.dev/template-hash, "" if absent
  absl::Time pod_created = absl::InfinitePast();
  std::string node;  // the pod's spec.nodeName, "" if not scheduled

  // "namespace/name".
  std::string PodKey() const { return pod_namespace + "/" + pod_name; }
};

// What the agent says about itself and its machine in Hello (informational).
struct TopologySummary {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
  std::string cpuset;
  double cpu_quota_cores = 0;      // 0 = no quota
  int64_t memory_limit_bytes = 0;  // 0 = no limit
};

struct HelloInfo {
  // The pod as the agent believes it to be; compare, never trust.
  std::string claimed_namespace;
  std::string claimed_pod;
  std::string claimed_uid;
  std::string agent_version;
  std::string incarnation;
  TopologySummary topology;
};

// What an agent read about its application's program (WindowReport go_version, app_cpus,
// go_default_godebug; docs/feedback.md), for the operator to tell a GOMAXPROCS that
// changes nothing (operator/rollout/go_facts.h).
struct AppFacts {
  std::string go_version;  // "go1.26.0"; "" = not a Go program, or unreadable
  int cpus = 0;            // CPUs the application may run on; 0 = unknown
  std::string go_default_godebug;
  bool operator==(const AppFacts&) const = default;
};

enum class KnobOutcome { kUnspecified, kApplied, kFailed, kNotReachable };
absl::string_view KnobOutcomeName(KnobOutcome outcome);  // "applied", "failed", ...

struct KnobResult {
  std::string name;
  KnobOutcome outcome = KnobOutcome::kUnspecified;
  std::string reason;
};

// An agent's Applied message, as received.
struct AppliedReport {
  int64_t generation = 0;
  std::vector<KnobResult> knobs;
  absl::Time received = absl::InfinitePast();
};

enum class DirectiveAction { kObserve, kApply, kRollback };

// The tuning the operator asks one agent to run. The server fills in the arm and the
// profile from the agent's identity, so a directive cannot name another pod's arm.
struct DirectiveSpec {
  int64_t generation = 0;
  DirectiveAction action = DirectiveAction::kObserve;
  // Keys of the agent's directive vocabulary (sidecar/loop/directive.h), in order:
  // "placement", "sysctl.net.core.somaxconn", "runtime.listen_backlog", ...
  std::vector<std::pair<std::string, std::string>> settings;
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_TYPES_H_
