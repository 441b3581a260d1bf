// The operator's own Prometheus series (operator_metrics.h).
#include "operator/controller/operator_metrics.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/search_spec.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace booster::controller {

OperatorMetrics::OperatorMetrics(absl::Time started)
    : registry(std::make_shared<prometheus::Registry>()),
      reconcile_total(prometheus::BuildCounter()
                          .Name("booster_operator_reconcile_total")
                          .Help("Reconciles of BoosterProfiles by result")
                          .Register(*registry)),
      reconcile_errors(prometheus::BuildCounter()
                           .Name("booster_operator_reconcile_errors_total")
                           .Help("Reconciles that ended with an error (retried)")
                           .Register(*registry)
                           .Add({})),
      reconcile_duration(
          prometheus::BuildHistogram()
              .Name("booster_operator_reconcile_duration_seconds")
              .Help("Time of one reconcile, API calls included")
              .Register(*registry)
              .Add({},
                   prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1, 0.25, 0.5, 1, 2.5, 5, 10})),
      leader(prometheus::BuildGauge()
                 .Name("booster_operator_leader")
                 .Help("1 while this replica is the leader")
                 .Register(*registry)
                 .Add({})),
      informer_synced(prometheus::BuildGauge()
                          .Name("booster_operator_informer_synced")
                          .Help("1 once the informer's first list is cached")
                          .Register(*registry)),
      informer_events(prometheus::BuildGauge()
                          .Name("booster_operator_informer_events")
                          .Help("Watch events handled by each informer")
                          .Register(*registry)),
      informer_objects(prometheus::BuildGauge()
                           .Name("booster_operator_informer_objects")
                           .Help("Objects cached by each informer")
                           .Register(*registry)),
      informer_relists(prometheus::BuildGauge()
                           .Name("booster_operator_informer_relists")
                           .Help("Relists after a watch's resourceVersion expired (410 Gone)")
                           .Register(*registry)),
      started_(started),
      phase_(prometheus::BuildGauge()
                 .Name("booster_operator_profile_phase")
                 .Help("1 for the current phase of each BoosterProfile, 0 for the others")
                 .Register(*registry)),
      weight_(prometheus::BuildGauge()
                  .Name("booster_operator_profile_canary_weight")
                  .Help("Percent of the replicas on the canary")
                  .Register(*registry)),
      verdict_(prometheus::BuildGauge()
                   .Name("booster_operator_verdict_timestamp_seconds")
                   .Help("Time of the last verdict on each BoosterProfile's step "
                         "(status.lastDecision), labelled with the step, verdict and reason")
                   .Register(*registry)),
      dry_run_(prometheus::BuildCounter()
                   .Name("booster_operator_dry_run_verdicts_total")
                   .Help("Verdicts that would have rolled a BoosterProfile's rollout back and "
                         "did not, because spec.rollout.analysis.dryRun is set "
                         "(status.lastDecision.dryRun), by verdict")
                   .Register(*registry)),
      foreign_(prometheus::BuildGauge()
                   .Name("booster_operator_profile_foreign")
                   .Help("1 for each BoosterProfile another operator instance manages "
                         "(label instance); this one writes nothing to it")
                   .Register(*registry)),
      trial_(prometheus::BuildGauge()
                 .Name("booster_operator_search_trial_objective_percent")
                 .Help("Each trial of a BoosterProfile's search (status.search.trials): the "
                       "objective's change against the trial's baseline in percent, positive "
                       "= better (0 without a figure), labelled with the trial's number, "
                       "change and result (Running while it runs)")
                 .Register(*registry)),
      analysis_median_(prometheus::BuildGauge()
                           .Name("booster_operator_analysis_median")
                           .Help("Each metric's median over an arm's windows at the last "
                                 "decision on a BoosterProfile's step (status.lastDecision."
                                 "evidence), labelled with the step, metric and arm")
                           .Register(*registry)),
      analysis_change_(prometheus::BuildGauge()
                           .Name("booster_operator_analysis_change_percent")
                           .Help("Each metric's canary median against the baseline's in percent "
                                 "at the last decision (+Inf/-Inf from a zero baseline), "
                                 "labelled with the step and metric")
                           .Register(*registry)),
      analysis_p_(prometheus::BuildGauge()
                      .Name("booster_operator_analysis_p_value")
                      .Help("Each judged metric's p-value at the last decision, labelled with "
                            "the step and metric")
                      .Register(*registry)),
      analysis_verdict_(prometheus::BuildGauge()
                            .Name("booster_operator_analysis_metric_verdict")
                            .Help("1 for each metric of the last decision, labelled with the "
                                  "step, metric and its verdict (Pass, Fail, Inconclusive, "
                                  "Wait; NotJudged for figures shown beside the judged ones) "
                                  "and the decision's reason")
                            .Register(*registry)) {}

void OperatorMetrics::ProfileSeries::Replace(const std::string& key,
                                             const std::map<prometheus::Labels, double>& now) {
  auto found = series_.find(key);
  if (found == series_.end() && now.empty()) return;
  std::map<prometheus::Labels, prometheus::Gauge*>& series = series_[key];
  for (auto it = series.begin(); it != series.end();) {
    if (now.count(it->first) == 0) {
      family_.Remove(it->second);
      it = series.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [labels, value] : now) {
    prometheus::Gauge& g = family_.Add(labels);
    g.Set(value);
    series[labels] = &g;
  }
  if (series.empty()) series_.erase(key);
}

namespace {

// A figure of the evidence: "1.5", "+inf", "-inf"; nullopt for anything else.
std::optional<double> EvidenceNumber(const std::string& text) {
  if (text == "+inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || std::isnan(v)) return std::nullopt;
  return v;
}

// The median of an arm's evidence, "n=12 median=1.5": nullopt without windows.
std::optional<double> EvidenceMedian(const std::string& text) {
  const size_t at = text.find("median=");
  if (at == std::string::npos || absl::StartsWith(text, "n=0 ")) return std::nullopt;
  return EvidenceNumber(text.substr(at + 7));
}

}  // namespace

void OperatorMetrics::SetAnalysis(const std::string& ns, const std::string& name,
                                  const rollout::Decision* decision) {
  std::map<prometheus::Labels, double> medians, changes, p_values, verdicts;
  if (decision != nullptr) {
    const std::string step = std::to_string(decision->step);
    const std::map<std::string, std::string>& e = decision->evidence;
    auto at = [&](const std::string& key) -> const std::string* {
      auto it = e.find(key);
      return it == e.end() ? nullptr : &it->second;
    };
    for (const auto& [key, verdict] : e) {
      if (!absl::EndsWith(key, ".verdict")) continue;
      const std::string metric = key.substr(0, key.size() - 8);
      prometheus::Labels labels = {
          {"namespace", ns}, {"profile", name}, {"step", step}, {"metric", metric}};
      prometheus::Labels with_verdict = labels;
      with_verdict["verdict"] = verdict;
      with_verdict["reason"] = decision->reason;
      verdicts[with_verdict] = 1;
      for (const char* arm : {"baseline", "canary"}) {
        const std::string* text = at(absl::StrCat(metric, ".", arm));
        std::optional<double> median = text != nullptr ? EvidenceMedian(*text) : std::nullopt;
        if (!median) continue;
        prometheus::Labels a = labels;
        a["arm"] = arm;
        medians[a] = *median;
      }
      if (const std::string* c = at(metric + ".changePercent")) {
        if (std::optional<double> v = EvidenceNumber(*c)) changes[labels] = *v;
      }
      if (const std::string* p = at(metric + ".pValue")) {
        if (std::optional<double> v = EvidenceNumber(*p)) p_values[labels] = *v;
      }
    }
  }
  const std::string key = ns + "/" + name;
  medians_.Replace(key, medians);
  changes_.Replace(key, changes);
  p_values_.Replace(key, p_values);
  metric_verdicts_.Replace(key, verdicts);
}

void OperatorMetrics::SetTrials(const std::string& ns, const std::string& name,
                                const rollout::Json& search) {
  const std::string key = ns + "/" + name;
  std::map<prometheus::Labels, double> now;
  const rollout::Json trials =
      search.is_object() ? search.value("trials", rollout::Json::array()) : rollout::Json::array();
  for (const rollout::Json& t : trials) {
    if (!t.is_object()) continue;
    const rollout::Json v = t.value("value", rollout::Json());
    const bool running = !t.contains("result");
    const rollout::Json figure =
        t.value(running ? "objectiveSoFarPercent" : "objectiveImprovementPercent", rollout::Json());
    now[{{"namespace", ns},
         {"profile", name},
         {"trial", std::to_string(t.value("number", 0))},
         {"change", absl::StrCat(rollout::SearchKnobName(t.value("knob", "")), " = ",
                                 v.is_string() ? v.get<std::string>() : v.dump())},
         {"result", running ? "Running" : t.value("result", "")}}] =
        figure.is_number() ? figure.get<double>() : 0;
  }
  trials_.Replace(key, now);
}

void OperatorMetrics::Reconciled(const std::string& ns, const std::string& name,
                                 const rollout::RolloutStatus& status,
                                 const rollout::Observations&, const rollout::AnalysisSpec*) {
  std::lock_guard<std::mutex> l(mu_);
  ForgetForeign(ns + "/" + name);
  for (rollout::Phase p : kPhases) {
    phase_
        .Add({{"namespace", ns}, {"profile", name}, {"phase", std::string(rollout::PhaseName(p))}})
        .Set(p == status.phase ? 1 : 0);
  }
  weight_.Add({{"namespace", ns}, {"profile", name}}).Set(status.canary_weight);
  known_[ns + "/" + name] = true;
  SetTrials(ns, name, status.search);
  // Read from the status, so every leader exports the same series: one per profile, the
  // last decision's (Grafana draws it as an annotation at the value's time).
  const std::string key = ns + "/" + name;
  const std::optional<rollout::Decision>& d = status.last_decision;
  if (!d || d->time == absl::InfinitePast()) {
    ForgetVerdict(key);
    SetAnalysis(ns, name, nullptr);
    return;
  }
  SetAnalysis(ns, name, &*d);
  prometheus::Labels labels = {{"namespace", ns},
                               {"profile", name},
                               {"step", std::to_string(d->step)},
                               {"verdict", d->verdict},
                               {"reason", d->reason}};
  auto it = verdicts_.find(key);
  if (it != verdicts_.end() && it->second.first != labels) ForgetVerdict(key);
  prometheus::Gauge& g = verdict_.Add(labels);
  g.Set(absl::ToDoubleSeconds(d->time - absl::UnixEpoch()));
  verdicts_[key] = {labels, &g};
  // Each such decision once: the status carries it on every later pass too, read back at
  // the status' precision (whole seconds), so the pass that made it and the passes that
  // read it must agree on the same instant.
  auto whole_seconds = [](absl::Time t) { return absl::FromUnixSeconds(absl::ToUnixSeconds(t)); };
  const absl::Time decided = whole_seconds(d->time);
  if (d->dry_run && decided >= whole_seconds(started_) &&
      dry_run_counted_[key] != decided) {
    dry_run_counted_[key] = decided;
    dry_run_.Add({{"namespace", ns}, {"profile", name}, {"verdict", d->verdict}}).Increment();
  }
}

void OperatorMetrics::Forgotten(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  ForgetForeign(ns + "/" + name);
  if (known_.erase(ns + "/" + name) == 0) return;
  for (rollout::Phase p : kPhases) {
    phase_.Remove(&phase_.Add(
        {{"namespace", ns}, {"profile", name}, {"phase", std::string(rollout::PhaseName(p))}}));
  }
  weight_.Remove(&weight_.Add({{"namespace", ns}, {"profile", name}}));
  ForgetVerdict(ns + "/" + name);
  SetAnalysis(ns, name, nullptr);
  SetTrials(ns, name, rollout::Json());
  dry_run_counted_.erase(ns + "/" + name);
  for (const char* verdict : {"Fail", "Inconclusive"}) {
    dry_run_.Remove(&dry_run_.Add({{"namespace", ns}, {"profile", name}, {"verdict", verdict}}));
  }
}

void OperatorMetrics::Foreign(const std::string& ns, const std::string& name,
                              const std::string& instance) {
  Forgotten(ns, name);
  std::lock_guard<std::mutex> l(mu_);
  prometheus::Labels labels = {{"namespace", ns}, {"profile", name}, {"instance", instance}};
  prometheus::Gauge& g = foreign_.Add(labels);
  g.Set(1);
  foreign_series_[ns + "/" + name] = {labels, &g};
}

void OperatorMetrics::ForgetForeign(const std::string& key) {
  auto it = foreign_series_.find(key);
  if (it == foreign_series_.end()) return;
  foreign_.Remove(it->second.second);
  foreign_series_.erase(it);
}

void OperatorMetrics::ForgetVerdict(const std::string& key) {
  auto it = verdicts_.find(key);
  if (it == verdicts_.end()) return;
  verdict_.Remove(it->second.second);
  verdicts_.erase(it);
}

}  // namespace booster::controller
