// Plain C++ types of the agent's side of the agent <-> operator stream (docs/feedback.md,
// proto/booster/v1/agent.proto). They mirror the messages without depending on protobuf,
// so the agent loop hands the FeedbackClient values and never sees a generated type.
//
//   FeedbackWindow w{.start = t0, .end = t0 + absl::Seconds(30), .template_hash = "7f9c"};
//   w.metrics["latencyP99"] = {.value = 0.012, .samples = 5400};  // absent = not measured
//   if (absl::Status s = ValidateFeedbackWindow(w); !s.ok()) ...
#ifndef BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_TYPES_H_
#define BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_TYPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/histogram.h"

namespace booster::agent {

// One measured value of a window.
struct FeedbackMetric {
  double value = 0;
  // Observations behind the value (requests, ticks); 0 means unknown.
  int64_t samples = 0;
};

// One closed measurement window, as the agent reports it. The client adds the
// incarnation and the sequence number.
struct FeedbackWindow {
  absl::Time start = absl::InfinitePast();
  absl::Time end = absl::InfinitePast();
  // By the CRD's metric names: latencyP50, latencyP99, latencyP999, throughput, errorRate,
  // cpuPerRequest, cpuThrottling, runQueueDelay, listenOverflows, retransmits, memoryRss,
  // goGcCpuShare, goHeapBytes. A metric the agent could not measure is absent, never 0.
  // Other names are ignored by the operator.
  std::map<std::string, FeedbackMetric> metrics;
  // The application's latency histogram over the window, the latency metrics' source
  // (common/histogram.h); empty when the agent read none.
  Buckets latency_buckets;
  // The pod-template hash the agent runs under (annotation booster.dev/template-hash).
  std::string template_hash;
  // Generation of the last Directive applied; 0 before any.
  int64_t profile_generation = 0;
  // The application's program: the Go version its executable was built with ("go1.26.0";
  // "" when not a Go program or not readable), the CPUs it may run on (0: unknown) and the
  // default GODEBUG of its build info ("" when none).
  std::string go_version;
  int32_t app_cpus = 0;
  std::string go_default_godebug;
};

// kOk, or kInvalidArgument saying what the operator would refuse the window for: a start
// or end that is infinite or outside what Unix nanoseconds in an int64 can hold, an end
// not after the start, a metric with an empty name, a non-finite value or a negative
// sample count, a latency histogram CheckBuckets refuses, a Go version or default GODEBUG
// that is not printable ASCII of at most 128 or 4096 characters (the stream's strings must
// be UTF-8), negative app_cpus.
absl::Status ValidateFeedbackWindow(const FeedbackWindow& window);

// The pod as the agent believes it to be (downward API). Informational for the operator,
// which takes the identity from the token.
struct FeedbackPod {
  std::string pod_namespace;
  std::string name;
  std::string uid;
};

// What the agent found the application container may use (proto Topology).
struct FeedbackTopology {
  int32_t packages = 0;
  int32_t numa_nodes = 0;
  int32_t cores = 0;
  int32_t pus = 0;                 // hardware threads
  std::string cpuset;              // list format: "0-3,8"
  double cpu_quota_cores = 0;      // 0 = no quota
  int64_t memory_limit_bytes = 0;  // 0 = no limit
};

enum class FeedbackAction { kUnspecified, kObserve, kApply, kRollback };

// The tuning the operator asks the agent to run. It replaces the previous one; the agent
// ignores one whose generation is not above the last it applied (the client passes every
// Directive on and leaves that decision to the agent).
struct FeedbackDirective {
  int64_t generation = 0;
  FeedbackAction action = FeedbackAction::kUnspecified;
  std::string arm;      // "baseline" or "canary"
  std::string profile;  // "namespace/name" of the BoosterProfile
  // Keys of the agent's directive vocabulary (sidecar/loop/directive.h), in order.
  std::vector<std::pair<std::string, std::string>> settings;
};

enum class FeedbackKnobOutcome { kUnspecified, kApplied, kFailed, kNotReachable };

struct FeedbackKnob {
  std::string name;  // a Directive setting key: "sysctl.net.core.somaxconn", "placement"
  FeedbackKnobOutcome outcome = FeedbackKnobOutcome::kUnspecified;
  std::string reason;  // why, when not applied
};

// What took effect after a Directive (or start-up recovery, or a revert).
struct FeedbackApplied {
  int64_t generation = 0;
  std::vector<FeedbackKnob> knobs;
};

// Counters for the agent's /metrics. Monotonic except `connected`, `backing_off`,
// `retry_at` and `buffered`.
struct FeedbackClientStats {
  // A stream is open: Hello was written and the stream has not ended. A stream the
  // operator refuses is open until its refusal arrives (right after the TokenReview).
  bool connected = false;
  // Waiting until `retry_at` (Clock time) before the next attempt.
  bool backing_off = false;
  absl::Time retry_at = absl::InfinitePast();
  uint64_t connect_attempts = 0;
  uint64_t reconnects = 0;        // attempts after the first
  uint64_t streams_opened = 0;    // attempts that got Hello written
  uint64_t reports_sent = 0;      // WindowReports written, replays included
  uint64_t reports_replayed = 0;  // of them, written again on a later stream
  uint64_t reports_acked = 0;     // dropped from the buffer by an Ack
  uint64_t reports_dropped = 0;   // pushed out of the full buffer, never acknowledged
  uint64_t buffered = 0;          // held now, unacknowledged
  uint64_t applied_sent = 0;
  uint64_t directives_received = 0;
  std::map<std::string, uint64_t> rejects;  // by the operator's reason
  // The last failure: a stream's final status ("UNAUTHENTICATED: unauthenticated: ..."),
  // a connection or TLS failure, an unreadable token file. Kept after a recovery.
  std::string last_error;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_CLIENT_FEEDBACK_TYPES_H_
