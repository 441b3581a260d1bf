#include "operator/feedback/window_store.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace booster::feedback {
namespace {

const std::optional<MetricValue> kNoMetric;

}  // namespace

std::string StepId::ToString() const {
  return absl::StrCat("gen ", generation, " step ", step, " from ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", started, absl::UTCTimeZone()));
}

bool Window::SetMetric(absl::string_view name, double value, int64_t samples) {
  std::optional<int> i = MetricIndex(name);
  if (!i) return false;
  metrics[*i] = MetricValue{value, samples};
  return true;
}

const std::optional<MetricValue>& Window::Metric(absl::string_view name) const {
  std::optional<int> i = MetricIndex(name);
  return i ? metrics[*i] : kNoMetric;
}

absl::Status ValidateWindow(const Window& w) {
  if (w.pod_uid.empty()) return absl::InvalidArgumentError("window has no pod uid");
  if (w.incarnation.empty()) return absl::InvalidArgumentError("window has no incarnation");
  if (w.sequence == 0) return absl::InvalidArgumentError("window sequence must start at 1");
  if (w.start == absl::InfinitePast() || w.end == absl::InfiniteFuture() || w.end <= w.start) {
    return absl::InvalidArgumentError("window end must be after its start");
  }
  // No step starts before the Unix epoch (StepId::started defaults to it), so a window that
  // ends there could never be filed: a clock that is not set, or a corrupt time.
  if (w.end <= absl::UnixEpoch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("window ends at or before the Unix epoch (", absl::FormatTime(w.end),
                     "): the agent's clock is not set"));
  }
  for (int i = 0; i < kMetricCount; ++i) {
    if (!w.metrics[i]) continue;
    if (!std::isfinite(w.metrics[i]->value)) {
      return absl::InvalidArgumentError(absl::StrCat("metric ", kMetricNames[i], " is not finite"));
    }
    if (w.metrics[i]->samples < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", kMetricNames[i], " has a negative sample count"));
    }
  }
  if (w.latency_buckets != nullptr) {
    if (std::string why = CheckBuckets(*w.latency_buckets); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("latency histogram: ", why));
    }
  }
  return absl::OkStatus();
}

absl::string_view AddResultName(AddResult result) {
  switch (result) {
    case AddResult::kAccepted:
      return "accepted";
    case AddResult::kDuplicate:
      return "duplicate";
    case AddResult::kHeld:
      return "held";
    case AddResult::kNoStep:
      return "no_step";
    case AddResult::kBeforeStep:
      return "before_step";
    case AddResult::kStaleTemplate:
      return "stale_template";
    case AddResult::kInvalid:
      return "invalid_report";
  }
  return "unknown";
}

WindowStore::WindowStore(WindowStoreOptions options) : options_(options) {}

WindowStore::Profile* WindowStore::TouchProfileLocked(const std::string& profile,
                                                      bool only_evict_stepless) {
  auto it = profiles_.find(profile);
  if (it == profiles_.end()) {
    while (!profiles_.empty() && profiles_.size() >= std::max<size_t>(options_.max_profiles, 1)) {
      // A profile with no step open (only held windows) goes first, then the least
      // recently used.
      auto lru = std::min_element(profiles_.begin(), profiles_.end(), [](const auto& a,
                                                                         const auto& b) {
        return std::pair(!a.second.steps.empty(), a.second.last_used) <
               std::pair(!b.second.steps.empty(), b.second.last_used);
      });
      if (only_evict_stepless && !lru->second.steps.empty()) return nullptr;
      profiles_.erase(lru);
    }
    it = profiles_.emplace(profile, Profile{}).first;
  }
  it->second.last_used = ++tick_;
  return &it->second;
}

void WindowStore::BeginStep(const std::string& profile, const StepId& step,
                            const std::array<std::string, kArmCount>& template_hashes) {
  absl::MutexLock l(&mu_);
  Profile& p = *TouchProfileLocked(profile, /*only_evict_stepless=*/false);
  auto it =
      std::find_if(p.steps.begin(), p.steps.end(), [&](const Step& s) { return s.id == step; });
  if (it != p.steps.end()) {
    Step kept = std::move(*it);
    p.steps.erase(it);
    kept.template_hashes = template_hashes;
    p.steps.push_back(std::move(kept));
  } else {
    Step s;
    s.id = step;
    s.template_hashes = template_hashes;
    p.steps.push_back(std::move(s));
  }
  while (p.steps.size() > std::max<size_t>(options_.max_steps_per_profile, 1)) {
    p.steps.pop_front();
  }
  std::deque<Held> held;
  held.swap(p.held);
  for (Held& h : held) FileLocked(p, h.arm, std::move(h.window));
}

AddResult WindowStore::Add(const std::string& profile, Arm arm, Window window) {
  if (!ValidateWindow(window).ok()) return AddResult::kInvalid;
  absl::MutexLock l(&mu_);
  auto pit = profiles_.find(profile);
  if (pit == profiles_.end() || pit->second.steps.empty()) {
    // Held windows never push out a profile whose step is being measured.
    Profile* p = TouchProfileLocked(profile, /*only_evict_stepless=*/true);
    if (p == nullptr) return AddResult::kNoStep;
    if (p->held.size() >= std::max<size_t>(options_.max_held_per_profile, 1)) {
      p->held.pop_front();
    }
    p->held.push_back(Held{.arm = arm, .window = std::move(window)});
    return AddResult::kHeld;
  }
  Profile& p = pit->second;
  p.last_used = ++tick_;
  return FileLocked(p, arm, std::move(window));
}

AddResult WindowStore::FileLocked(Profile& p, Arm arm, Window window) {
  const uint64_t now = tick_;

  std::pair<std::string, std::string> key(window.pod_uid, window.incarnation);
  auto sit = p.dedupe.find(key);
  if (sit != p.dedupe.end()) {
    sit->second.last_used = now;
    if (window.sequence <= sit->second.floor || sit->second.seen.count(window.sequence) > 0) {
      return AddResult::kDuplicate;
    }
  }

  Step& step = p.steps.back();
  if (window.end <= step.id.started) return AddResult::kBeforeStep;
  const std::string& want = step.template_hashes[static_cast<int>(arm)];
  if (!want.empty() && window.template_hash != want) return AddResult::kStaleTemplate;

  if (sit == p.dedupe.end()) {
    while (!p.dedupe.empty() &&
           p.dedupe.size() >= std::max<size_t>(options_.max_incarnations_per_profile, 1)) {
      auto lru = std::min_element(
          p.dedupe.begin(), p.dedupe.end(),
          [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      p.dedupe.erase(lru);
    }
    sit = p.dedupe.emplace(std::move(key), Seen{}).first;
    sit->second.last_used = now;
  }
  Seen& seen = sit->second;
  seen.seen.insert(window.sequence);
  while (seen.seen.size() > std::max<size_t>(options_.max_sequences_per_incarnation, 1)) {
    seen.floor = std::max(seen.floor, *seen.seen.begin());
    seen.seen.erase(seen.seen.begin());
  }

  std::deque<Window>& windows = step.windows[static_cast<int>(arm)];
  windows.push_back(std::move(window));
  while (windows.size() > std::max<size_t>(options_.max_windows_per_arm, 1)) windows.pop_front();
  return AddResult::kAccepted;
}

std::optional<StepId> WindowStore::CurrentStep(const std::string& profile) const {
  absl::MutexLock l(&mu_);
  auto it = profiles_.find(profile);
  if (it == profiles_.end() || it->second.steps.empty()) return std::nullopt;
  return it->second.steps.back().id;
}

const WindowStore::Step* WindowStore::FindStepLocked(const std::string& profile,
                                                     const StepId& step) const {
  auto it = profiles_.find(profile);
  if (it == profiles_.end()) return nullptr;
  for (const Step& s : it->second.steps) {
    if (s.id == step) return &s;
  }
  return nullptr;
}

absl::StatusOr<StepWindows> WindowStore::Query(const std::string& profile, const StepId& step,
                                               const QueryOptions& options) const {
  absl::MutexLock l(&mu_);
  const Step* s = FindStepLocked(profile, step);
  if (s == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no windows kept for profile ", profile, " ", step.ToString()));
  }
  StepWindows out;
  out.step = s->id;
  for (Arm arm : kArms) {
    ArmWindows& aw = out.arms[static_cast<int>(arm)];
    for (const Window& w : s->windows[static_cast<int>(arm)]) {
      if (w.start < options.not_before || w.end > options.not_after) continue;
      if (w.pod_created != absl::InfinitePast() && w.start - w.pod_created < options.min_pod_age) {
        continue;
      }
      ++aw.windows;
      for (int i = 0; i < kMetricCount; ++i) {
        if (!w.metrics[i]) continue;
        const absl::string_view name = kMetricNames[i];
        aw.metrics[std::string(name)].push_back(MetricPoint{
            w.pod, w.pod_uid, w.pod_created, w.node, w.start, w.end, w.metrics[i]->value,
            w.metrics[i]->samples,
            rollout::IsLatencyQuantile(name) ? w.latency_buckets : nullptr});
      }
    }
    for (auto& [name, points] : aw.metrics) {
      std::stable_sort(points.begin(), points.end(),
                       [](const MetricPoint& a, const MetricPoint& b) {
                         return std::tie(a.start, a.pod) < std::tie(b.start, b.pod);
                       });
    }
  }
  return out;
}

void WindowStore::Forget(const std::string& profile) {
  absl::MutexLock l(&mu_);
  profiles_.erase(profile);
}

size_t WindowStore::WindowCount(const std::string& profile, const StepId& step, Arm arm) const {
  absl::MutexLock l(&mu_);
  const Step* s = FindStepLocked(profile, step);
  return s == nullptr ? 0 : s->windows[static_cast<int>(arm)].size();
}

std::optional<WindowStore::StepSummary> WindowStore::CurrentSummary(
    const std::string& profile) const {
  absl::MutexLock l(&mu_);
  auto it = profiles_.find(profile);
  if (it == profiles_.end() || it->second.steps.empty()) return std::nullopt;
  const Step& step = it->second.steps.back();
  StepSummary out{.step = step.id, .arms = {}};
  for (int a = 0; a < kArmCount; ++a) {
    std::set<std::string> pods;
    ArmSummary& arm = out.arms[a];
    for (const Window& w : step.windows[a]) {
      pods.insert(w.pod_uid);
      const std::optional<MetricValue>& rss = w.Metric("memoryRss");
      if (rss && (!arm.memory_rss_peak || rss->value > *arm.memory_rss_peak)) {
        arm.memory_rss_peak = rss->value;
        arm.memory_rss_peak_pod = w.pod;
      }
    }
    arm.pods = pods.size();
    arm.windows = step.windows[a].size();
  }
  return out;
}

size_t WindowStore::ProfileCount() const {
  absl::MutexLock l(&mu_);
  return profiles_.size();
}

}  // namespace booster::feedback
