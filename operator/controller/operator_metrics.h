// The operator's own Prometheus series: reconciles, leadership, informers, and per profile its
// phase, canary weight, last decision (and each metric's figures and verdict in it), dry-run
// verdicts and search trials, read from the status each
// reconcile writes (so every leader exports the same series). The series of a deleted or
// foreign profile are removed. Thread-safe: reconcile workers call it at once.
//
//   OperatorMetrics metrics(clock->Now());
//   ProfileReconciler r(..., &metrics);          // its ReconcileObserver
//   prometheus::Exposer(...).RegisterCollectable(metrics.registry);
#ifndef BOOSTER_OPERATOR_CONTROLLER_OPERATOR_METRICS_H_
#define BOOSTER_OPERATOR_CONTROLLER_OPERATOR_METRICS_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "operator/controller/reconciler.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace booster::controller {

class OperatorMetrics final : public ReconcileObserver {
 public:
  // `started`: decisions made before it (by an earlier process or another leader) are not
  // counted again in booster_operator_dry_run_verdicts_total.
  explicit OperatorMetrics(absl::Time started);

  void Reconciled(const std::string& ns, const std::string& name,
                  const rollout::RolloutStatus& status, const rollout::Observations&,
                  const rollout::AnalysisSpec* = nullptr) override;
  void Forgotten(const std::string& ns, const std::string& name) override;
  void Foreign(const std::string& ns, const std::string& name,
               const std::string& instance) override;

  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Family<prometheus::Counter>& reconcile_total;
  prometheus::Counter& reconcile_errors;
  prometheus::Histogram& reconcile_duration;
  prometheus::Gauge& leader;
  prometheus::Family<prometheus::Gauge>& informer_synced;
  prometheus::Family<prometheus::Gauge>& informer_events;
  prometheus::Family<prometheus::Gauge>& informer_objects;
  prometheus::Family<prometheus::Gauge>& informer_relists;

 private:
  static constexpr rollout::Phase kPhases[] = {
      rollout::Phase::kPending,     rollout::Phase::kEnrolling,  rollout::Phase::kProgressing,
      rollout::Phase::kPaused,      rollout::Phase::kPromoting,  rollout::Phase::kPromoted,
      rollout::Phase::kRollingBack, rollout::Phase::kRolledBack, rollout::Phase::kFailed};
  // The series of one family that belong to each profile, replaced as a whole.
  class ProfileSeries {
   public:
    explicit ProfileSeries(prometheus::Family<prometheus::Gauge>& family) : family_(family) {}
    // Profile `key`'s series become exactly `now` (none: all removed).
    void Replace(const std::string& key, const std::map<prometheus::Labels, double>& now);

   private:
    prometheus::Family<prometheus::Gauge>& family_;
    std::map<std::string, std::map<prometheus::Labels, prometheus::Gauge*>> series_;
  };
  void ForgetForeign(const std::string& key);
  void ForgetVerdict(const std::string& key);
  // booster_operator_search_trial_objective_percent: one series per trial of status.search.
  void SetTrials(const std::string& ns, const std::string& name, const rollout::Json& search);
  // booster_operator_analysis_*: each metric of the last decision's evidence (null: none).
  void SetAnalysis(const std::string& ns, const std::string& name,
                   const rollout::Decision* decision);

  const absl::Time started_;
  std::mutex mu_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Gauge>& weight_;
  prometheus::Family<prometheus::Gauge>& verdict_;
  prometheus::Family<prometheus::Counter>& dry_run_;
  prometheus::Family<prometheus::Gauge>& foreign_;
  prometheus::Family<prometheus::Gauge>& trial_;
  prometheus::Family<prometheus::Gauge>& analysis_median_;
  prometheus::Family<prometheus::Gauge>& analysis_change_;
  prometheus::Family<prometheus::Gauge>& analysis_p_;
  prometheus::Family<prometheus::Gauge>& analysis_verdict_;
  std::map<std::string, bool> known_;
  ProfileSeries trials_{trial_};
  ProfileSeries medians_{analysis_median_};
  ProfileSeries changes_{analysis_change_};
  ProfileSeries p_values_{analysis_p_};
  ProfileSeries metric_verdicts_{analysis_verdict_};
  std::map<std::string, std::pair<prometheus::Labels, prometheus::Gauge*>> foreign_series_;
  // The series of each profile's last decision, by "namespace/name".
  std::map<std::string, std::pair<prometheus::Labels, prometheus::Gauge*>> verdicts_;
  // The time of the last dry-run decision counted, by "namespace/name".
  std::map<std::string, absl::Time> dry_run_counted_;
};

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_OPERATOR_METRICS_H_
