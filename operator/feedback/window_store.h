// WindowStore: the measurement windows agents reported, per profile, per rollout step,
// per arm, for the judge to read. Bounded, deduplicated, thread-safe; no I/O and no clock.
//
// The rollout side opens a step (BeginStep) with the template hash each arm must run;
// the feedback server files every accepted report under the profile's current step
// (Add). A window is refused when:
//   - it is malformed (kInvalid),
//   - its (pod uid, incarnation, sequence) was accepted before: a replay after a
//     reconnect, even into a later step, counts once (kDuplicate),
//   - it ended before the current step started (kBeforeStep): agents send their recent
//     acknowledged windows again on every new stream, for a leader that took over,
//   - it ran under another template hash than the step's for its arm (kStaleTemplate).
// A window for a profile with no step open is held (kHeld, at most
// `max_held_per_profile`, the oldest dropped): a leader that just took over opens the
// step on its first reconcile, often after the agents' replays arrived. BeginStep files
// the held windows as Add would (dedupe, step start, template); Forget drops them.
// Profiles holding windows are forgotten before any profile with a step, and never to
// make room for held windows (kNoStep then).
// Bounds (WindowStoreOptions): each arm of a step keeps its newest `max_windows_per_arm`
// windows (the oldest is dropped), a profile keeps its `max_steps_per_profile` newest
// steps, and the store its `max_profiles` most recently active profiles; dedupe state is
// bounded per incarnation and per profile. Query() returns copies.
//
//   WindowStore store;
//   store.BeginStep("shop/web-boost", StepId{.generation = 4, .step = 1, .started = t0},
//                   {"hash-baseline", "hash-canary"});
//   store.Add("shop/web-boost", Arm::kCanary, window);        // from the feedback server
//   absl::StatusOr<StepWindows> w = store.Query("shop/web-boost", step,
//                                               {.min_pod_age = absl::Minutes(1)});
//   for (const MetricPoint& p : w->arm(Arm::kCanary).metrics.at("latencyP99")) ...
#ifndef BOOSTER_OPERATOR_FEEDBACK_WINDOW_STORE_H_
#define BOOSTER_OPERATOR_FEEDBACK_WINDOW_STORE_H_

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "operator/feedback/types.h"

namespace booster::feedback {

// A step of a rollout: the profile generation it belongs to, the step's index, and when
// the step started (status.stepStartTime: a step restarted, or a restarted rollout of the
// same generation, is a new step; windows that ended by then belong to none).
struct StepId {
  int64_t generation = 0;
  int32_t step = 0;
  absl::Time started = absl::UnixEpoch();

  auto operator<=>(const StepId& o) const {
    return std::tie(generation, step, started) <=>
           std::tie(o.generation, o.step, o.started);
  }
  bool operator==(const StepId& o) const = default;
  std::string ToString() const;  // "gen 4 step 1 from 2026-...Z"
};

struct MetricValue {
  double value = 0;
  int64_t samples = 0;
};

// One window of one agent, as the server files it.
struct Window {
  std::string pod;  // pod name (the profile's namespace)
  std::string pod_uid;
  absl::Time pod_created = absl::InfinitePast();
  std::string node;  // the pod's node, from its identity; "" when unknown
  std::string incarnation;
  uint64_t sequence = 0;
  absl::Time start = absl::InfinitePast();
  absl::Time end = absl::InfinitePast();
  std::string template_hash;
  int64_t profile_generation = 0;
  // Indexed like kMetricNames; nullopt = not measured in this window.
  std::array<std::optional<MetricValue>, kMetricCount> metrics;
  // The application's latency histogram over the window (common/histogram.h), the latency
  // metrics' source; null when the agent sent none. Shared, never changed once filed.
  std::shared_ptr<const Buckets> latency_buckets;

  // Sets a known metric; false for an unknown name.
  bool SetMetric(absl::string_view name, double value, int64_t samples);
  const std::optional<MetricValue>& Metric(absl::string_view name) const;
};

// kOk, or kInvalidArgument naming what is wrong: no pod uid or incarnation, sequence 0,
// end not after start, a non-finite value or negative sample count, a latency histogram
// CheckBuckets refuses.
absl::Status ValidateWindow(const Window& window);

enum class AddResult {
  kAccepted,
  kDuplicate,
  kHeld,
  kNoStep,  // no step open, and no room to hold it without forgetting a measured step
  kBeforeStep,
  kStaleTemplate,
  kInvalid,
};
absl::string_view AddResultName(AddResult result);  // "accepted", "duplicate", ...

// One metric of one window, for the judge.
struct MetricPoint {
  std::string pod;
  std::string pod_uid;
  absl::Time pod_created = absl::InfinitePast();
  std::string node;
  absl::Time start = absl::InfinitePast();
  absl::Time end = absl::InfinitePast();
  double value = 0;
  int64_t samples = 0;
  // The window's latency histogram, on latencyP50/P99/P999 points only; null otherwise.
  std::shared_ptr<const Buckets> latency_buckets;
};

struct ArmWindows {
  size_t windows = 0;  // windows that passed the query's filter
  // Metric name -> its points ordered by (start, pod). A metric no window measured is
  // absent.
  std::map<std::string, std::vector<MetricPoint>> metrics;
};

struct StepWindows {
  StepId step;
  std::array<ArmWindows, kArmCount> arms;
  const ArmWindows& arm(Arm a) const { return arms[static_cast<int>(a)]; }
};

// Which windows a query returns. A window is kept when it lies within [not_before,
// not_after] and its pod was at least `min_pod_age` old when the window started (a
// freshly started pod warms caches and JITs and would bias its arm).
struct QueryOptions {
  absl::Time not_before = absl::InfinitePast();
  absl::Time not_after = absl::InfiniteFuture();
  absl::Duration min_pod_age = absl::ZeroDuration();
};

struct WindowStoreOptions {
  size_t max_windows_per_arm = 1024;
  size_t max_steps_per_profile = 2;  // the current step and the one before it
  size_t max_profiles = 64;
  size_t max_held_per_profile = 512;  // windows held while no step is open
  // Dedupe memory: sequences remembered per (pod uid, incarnation), older ones counting
  // as seen, and incarnations remembered per profile (least recently used forgotten).
  size_t max_sequences_per_incarnation = 4096;
  size_t max_incarnations_per_profile = 4096;
};

class WindowStore {
 public:
  explicit WindowStore(WindowStoreOptions options = {});
  WindowStore(const WindowStore&) = delete;
  WindowStore& operator=(const WindowStore&) = delete;

  // Makes `step` the current step of `profile` (creating the profile if needed), with the
  // template hash each arm must run, indexed by Arm; "" accepts any. Calling it again for
  // the current step only updates the hashes; for an older step still kept, makes it
  // current again with its windows. Windows held for the profile are then filed.
  void BeginStep(const std::string& profile, const StepId& step,
                 const std::array<std::string, kArmCount>& template_hashes);

  // Files `window` under the current step of `profile`.
  AddResult Add(const std::string& profile, Arm arm, Window window);

  // The current step of `profile`, if one is open.
  std::optional<StepId> CurrentStep(const std::string& profile) const;

  // The windows of `step` that pass `options`; kNotFound for an unknown profile or step.
  absl::StatusOr<StepWindows> Query(const std::string& profile, const StepId& step,
                                    const QueryOptions& options = {}) const;

  // Drops everything about `profile` (deleted, or its rollout finished).
  void Forget(const std::string& profile);

  // The current step of `profile` and, per arm, the pods that reported into it and the
  // windows held; nullopt when no step is open.
  struct ArmSummary {
    size_t pods = 0;
    size_t windows = 0;
    // The highest memoryRss of the arm's windows and the pod that reported it (the memory
    // guardrail); unset when no window measured it.
    std::optional<double> memory_rss_peak;
    std::string memory_rss_peak_pod;
  };
  struct StepSummary {
    StepId step;
    std::array<ArmSummary, kArmCount> arms;
  };
  std::optional<StepSummary> CurrentSummary(const std::string& profile) const;

  // Windows held for `profile`/`step`/`arm` (0 if unknown), and profiles held.
  size_t WindowCount(const std::string& profile, const StepId& step, Arm arm) const;
  size_t ProfileCount() const;

 private:
  struct Step {
    StepId id;
    std::array<std::string, kArmCount> template_hashes;
    std::array<std::deque<Window>, kArmCount> windows;
  };
  // Sequences seen of one (pod uid, incarnation): everything <= floor, plus `seen`.
  struct Seen {
    uint64_t floor = 0;
    std::set<uint64_t> seen;
    uint64_t last_used = 0;
  };
  struct Held {
    Arm arm = Arm::kBaseline;
    Window window;
  };
  struct Profile {
    std::deque<Step> steps;  // oldest first; the back is the current step
    std::deque<Held> held;   // arrived while no step was open, oldest first
    std::map<std::pair<std::string, std::string>, Seen> dedupe;
    uint64_t last_used = 0;
  };

  // The profile, created if needed; nullptr when making room would forget a profile
  // with a step and `only_evict_stepless`.
  Profile* TouchProfileLocked(const std::string& profile, bool only_evict_stepless)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  AddResult FileLocked(Profile& p, Arm arm, Window window) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Step* FindStepLocked(const std::string& profile, const StepId& step) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const WindowStoreOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Profile> profiles_ ABSL_GUARDED_BY(mu_);
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;  // logical time for least-recently-used
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_WINDOW_STORE_H_
