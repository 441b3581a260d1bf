// The Prometheus metrics' windows (source.h).
#include "operator/prometheus/source.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace booster::promql {

std::vector<rollout::MetricSpec> PrometheusMetrics(const rollout::AnalysisSpec& spec) {
  std::vector<rollout::MetricSpec> out;
  if (spec.mode != rollout::AnalysisMode::kMetrics) return out;
  for (const rollout::MetricSpec& m : spec.metrics) {
    if (!m.prometheus_query.empty()) out.push_back(m);
  }
  return out;
}

PrometheusWindows::PrometheusWindows(Querier* querier, PodLister pods, QueryObserver* observer,
                                     Clock* clock, SourceOptions options)
    : querier_(querier),
      pods_(std::move(pods)),
      observer_(observer),
      clock_(clock),
      options_(options) {}

PrometheusWindows::~PrometheusWindows() { Stop(); }

bool PrometheusWindows::SameStep(const Tracked& a, const Tracked& b) {
  return a.ns == b.ns && a.name == b.name && a.generation == b.generation && a.step == b.step &&
         a.step_started == b.step_started && a.analysis_start == b.analysis_start &&
         a.interval == b.interval;
}

void PrometheusWindows::Track(const std::string& key, Tracked tracked) {
  if (tracked.metrics.empty()) {
    Forget(key);
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && SameStep(it->second.tracked, tracked)) {
    // The same step: the fresh baseline's marker may have become known.
    it->second.tracked.markers = tracked.markers;
    it->second.tracked.metrics = std::move(tracked.metrics);
    return;
  }
  Entry& e = entries_[key];
  e = Entry{};
  e.tracked = std::move(tracked);
  woken_ = true;
  cv_.notify_all();
}

void PrometheusWindows::Forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  entries_.erase(key);
}

absl::StatusOr<analysis::ArmWindows> PrometheusWindows::Windows(
    const analysis::WindowQuery& query) {
  analysis::ArmWindows out;
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(absl::StrCat(query.profile_namespace, "/", query.profile_name));
  if (it == entries_.end() || it->second.tracked.step != query.step) return out;
  for (const auto& [metric, arms] : it->second.series) {
    for (size_t a = 0; a < arms.size(); ++a) {
      std::vector<analysis::Window>* into = nullptr;
      for (const analysis::Window& w : arms[a].windows) {
        if (w.start < query.since) continue;
        if (into == nullptr) into = &(a == 0 ? out.baseline : out.canary)[metric];
        into->push_back(w);
      }
    }
  }
  return out;
}

absl::Time PrometheusWindows::RunDue(absl::Time now) {
  // One query to send: which profile, step, boundary, metric and arm.
  struct Job {
    std::string key;
    Tracked step;  // a copy, to check the answer still belongs to the tracked step
    int boundary = 0;
    size_t metric = 0;
    int arm = 0;
    absl::Time pod_start = absl::InfinitePast();  // the newest of the arm's pods
  };
  std::vector<Job> jobs;
  absl::Time next = absl::InfiniteFuture();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [key, e] : entries_) {
      const Tracked& t = e.tracked;
      if (t.analysis_start == absl::InfinitePast() || t.interval <= absl::ZeroDuration() ||
          t.metrics.empty()) {
        continue;
      }
      // Boundaries k (1-based) with analysis_start + k * interval + delay <= now.
      const double since = absl::FDivDuration(now - options_.delay - t.analysis_start, t.interval);
      const int last_due = since < 1 ? 0 : static_cast<int>(std::floor(since));
      if (e.next_boundary <= last_due) {
        e.next_boundary = std::max(e.next_boundary, last_due - options_.max_windows + 1);
      }
      while (e.next_boundary <= last_due &&
             static_cast<int>(jobs.size()) < options_.max_queries_per_round) {
        for (size_t m = 0; m < t.metrics.size(); ++m) {
          for (int arm = 0; arm < 2; ++arm) {
            if (t.markers[arm].empty()) continue;
            jobs.push_back(Job{key, t, e.next_boundary, m, arm, absl::InfinitePast()});
          }
        }
        ++e.next_boundary;
      }
      next = std::min(next, e.next_boundary <= last_due
                                ? now
                                : t.analysis_start + e.next_boundary * t.interval + options_.delay);
    }
  }

  // The arms' pods, once per profile and arm this round.
  std::map<std::pair<std::string, int>, ArmPods> pods;
  std::vector<std::pair<Job, QueryReport>> answers;
  for (Job& job : jobs) {
    const Tracked& t = job.step;
    auto [at_pods, fresh] = pods.try_emplace({job.key, job.arm});
    if (fresh) at_pods->second = pods_(t.ns, t.markers[job.arm]);
    const ArmPods& arm_pods = at_pods->second;
    const rollout::MetricSpec& metric = t.metrics[job.metric];
    QueryReport r;
    r.ns = t.ns;
    r.profile = t.name;
    r.metric = metric.name;
    r.arm = kArms[job.arm];
    r.at = t.analysis_start + job.boundary * t.interval;
    r.query = metric.prometheus_query;
    if (arm_pods.names.empty()) {
      r.result.outcome = QueryOutcome::kEmpty;
      r.result.message = "the arm has no running pods to ask about";
    } else {
      absl::StatusOr<std::string> q =
          RenderQuery(metric.prometheus_query, {t.ns, arm_pods.names, t.interval});
      if (!q.ok()) {
        r.result.outcome = QueryOutcome::kError;
        r.result.message = std::string(q.status().message());
      } else {
        r.query = *q;
        r.result = querier_->Query(*q, r.at);
      }
    }
    job.pod_start = arm_pods.newest_start;
    answers.emplace_back(std::move(job), std::move(r));
  }

  std::vector<QueryReport> reports;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [job, r] : answers) {
      auto it = entries_.find(job.key);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      const Tracked& asked = job.step;
      if (!SameStep(e.tracked, asked)) continue;  // the step moved on meanwhile
      Series& s = e.series[r.metric][job.arm];
      r.changed = !s.last.has_value() || *s.last != r.result.outcome;
      r.recovered = r.changed && s.last.has_value() && r.result.outcome == QueryOutcome::kValue;
      s.last = r.result.outcome;
      if (r.result.outcome == QueryOutcome::kValue) {
        analysis::Window w;
        w.start = r.at - asked.interval;
        w.end = r.at;
        w.value = r.result.value;
        w.pod = absl::StrCat(r.arm, " arm");
        w.pod_start = job.pod_start;
        auto pos =
            std::upper_bound(s.windows.begin(), s.windows.end(), w.end,
                             [](absl::Time end, const analysis::Window& x) { return end < x.end; });
        s.windows.insert(pos, std::move(w));
        if (static_cast<int>(s.windows.size()) > options_.max_windows) {
          s.windows.erase(s.windows.begin());
        }
      }
      reports.push_back(std::move(r));
    }
  }
  if (observer_ != nullptr) {
    for (const QueryReport& r : reports) observer_->Answered(r);
  }
  return next;
}

void PrometheusWindows::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    while (true) {
      const absl::Time now = clock_->Now();
      const absl::Time next = RunDue(now);
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return;
      if (woken_) {
        woken_ = false;
        continue;
      }
      // Looked at again at least every second: a Track of the same step can make a marker
      // known, which does not wake the loop.
      const absl::Duration wait = std::clamp(next - now, absl::ZeroDuration(), absl::Seconds(1));
      WaitUnlessStopped(*clock_, cv_, lock, wait, [this] { return stopping_ || woken_; });
      if (stopping_) return;
    }
  });
}

void PrometheusWindows::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<analysis::ArmWindows> CombinedWindowSource::Windows(
    const analysis::WindowQuery& query) {
  absl::StatusOr<analysis::ArmWindows> a = first_->Windows(query);
  if (!a.ok()) return a;
  absl::StatusOr<analysis::ArmWindows> b = second_->Windows(query);
  if (!b.ok()) return b;
  for (auto& [metric, windows] : b->baseline) {
    auto& into = a->baseline[metric];
    into.insert(into.end(), windows.begin(), windows.end());
  }
  for (auto& [metric, windows] : b->canary) {
    auto& into = a->canary[metric];
    into.insert(into.end(), windows.begin(), windows.end());
  }
  return a;
}

}  // namespace booster::promql
