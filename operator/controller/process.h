// The booster-operator process as an object that owns its parts and their order:
//
//   Start: /metrics and /healthz,/readyz -> informers -> leader election (or not)
//   Run:   once this replica leads and every informer has synced: the agents' feedback
//          server (when it has a certificate), then the workers
//   Stop:  feedback server -> workers -> the Lease -> the watches -> the HTTP endpoints
//
// Steps are opened in the window store as the reconciler reports them (a profile at step
// k with both arms' template hashes), so agents' windows are filed under the step they
// measured.
//
// main() only parses the flags, blocks the termination signals and hands one of them to
// RequestStop(); everything else, and its teardown, lives here.
//
//   absl::StatusOr<std::unique_ptr<OperatorProcess>> p = OperatorProcess::Create(options);
//   std::thread t([&] { sigwait(...); (*p)->RequestStop("SIGTERM"); });
//   int code = (*p)->Run();   // 0 after a requested stop, 1 when leadership was lost
#ifndef BOOSTER_OPERATOR_CONTROLLER_PROCESS_H_
#define BOOSTER_OPERATOR_CONTROLLER_PROCESS_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/controller/namespace_policy.h"
#include "operator/controller/options.h"
#include "operator/controller/reconciler.h"
#include "operator/controller/metric_queries.h"
#include "operator/prometheus/client.h"
#include "operator/prometheus/source.h"
#include "operator/controller/store_window_source.h"
#include "operator/feedback/pod_lookup.h"
#include "operator/feedback/prometheus_observer.h"
#include "operator/feedback/reach_tracker.h"
#include "operator/feedback/server.h"
#include "operator/feedback/token_review.h"
#include "operator/feedback/window_store.h"
#include "operator/kube/client.h"
#include "operator/kube/controller.h"
#include "operator/kube/events.h"
#include "operator/kube/informer.h"
#include "operator/kube/leader_election.h"
#include "operator/notify/dispatcher.h"

namespace booster::controller {

class OperatorMetrics;  // prometheus-cpp registry and families (operator_metrics.h)
class StepTracker;      // opens steps in the window store as profiles reach them
class HttpEndpoints;    // the /metrics exposer and the probe server (process.cc)

class OperatorProcess {
 public:
  // Builds every part (nothing runs yet) against `client`; binds the HTTP endpoints, so a
  // taken port is an error here. `clock` is not owned.
  static absl::StatusOr<std::unique_ptr<OperatorProcess>> Create(
      const OperatorOptions& options, std::unique_ptr<kube::Client> client,
      Clock* clock = &RealClock::Get());
  // The cluster configuration from the options (kubeconfig or in-cluster) and its client.
  static absl::StatusOr<std::unique_ptr<kube::Client>> NewClient(const OperatorOptions& options);

  ~OperatorProcess();
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Starts the parts, waits for a stop request or the loss of the Lease, stops the parts in
  // order. Returns the exit code. Call once.
  int Run();
  // Thread-safe; `why` goes into the log.
  void RequestStop(const std::string& why);

  // Bound ports of the endpoints (tests pass ":0").
  int metrics_port() const;
  int health_port() const;
  // The feedback server's bound port once it runs, else 0.
  int feedback_port() const;
  // The agents' windows, per profile, step and arm.
  const feedback::WindowStore& windows() const { return windows_; }

 private:
  OperatorProcess(const OperatorOptions& options, std::unique_ptr<kube::Client> client,
                  Clock* clock);
  absl::Status Build();
  void StartElection();
  [[noreturn]] void ExitLeadershipLost();
  std::string InformersNotSynced() const;
  void RefreshInformerMetrics();
  absl::StatusOr<kube::Result> ReconcileAndMeasure(const std::string& key);
  absl::Status StartFeedback();
  void PublishEndpoint();

  const OperatorOptions options_;
  Clock* const clock_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<OperatorMetrics> metrics_;
  feedback::WindowStore windows_;
  std::unique_ptr<StepTracker> steps_;

  // Informers, in the order they start; the reconciler reads their stores.
  std::unique_ptr<kube::Informer> profiles_, deployments_, replicasets_, pods_, hpas_;
  // Shared analysis templates; null when their CRDs are not installed (the API server
  // does not serve the resource): a profile naming one then holds, InvalidSpec.
  std::unique_ptr<kube::Informer> analysis_templates_, cluster_analysis_templates_;
  // Opted-in Namespaces (with --namespace-label, watching every namespace), else null.
  std::unique_ptr<kube::Informer> namespaces_;
  NamespacePolicy namespace_policy_;
  std::vector<std::pair<std::string, kube::Informer*>> informers_;

  std::unique_ptr<kube::EventRecorder> recorder_;
  // The judge over the agents' windows and the Prometheus metrics' (mode Metrics); mode
  // Time profiles are judged by time inside it. Declared after windows_, which it reads.
  StoreWindowSource window_source_{&windows_};
  // The profiles' Prometheus metrics (operator/prometheus): null without
  // --prometheus-address, and then the judge reads the agents' windows alone.
  std::unique_ptr<promql::HttpQuerier> querier_;
  std::unique_ptr<MetricQueries> metric_queries_;
  std::unique_ptr<promql::PrometheusWindows> prometheus_windows_;
  std::unique_ptr<promql::CombinedWindowSource> all_windows_;
  std::unique_ptr<analysis::JudgeVerdictSource> verdicts_;
  // What the canary agents applied, for condition TuningReached; fed by the server.
  feedback::ReachTracker reach_;
  // spec.notifications: delivered off the reconcile path (operator/notify).
  std::unique_ptr<notify::DeliveryObserver> notification_reports_;
  std::unique_ptr<notify::Poster> poster_;
  std::unique_ptr<notify::SecretReader> secrets_;
  std::unique_ptr<notify::Dispatcher> notifications_;
  std::unique_ptr<ProfileReconciler> reconciler_;
  std::unique_ptr<kube::Controller> controller_;
  std::unique_ptr<kube::LeaderElector> elector_;
  std::thread elector_thread_;
  std::unique_ptr<feedback::KubeTokenReviewer> reviewer_;
  std::unique_ptr<feedback::StorePodLookup> pod_lookup_;
  std::unique_ptr<feedback::PrometheusFeedbackObserver> feedback_metrics_;
  std::unique_ptr<feedback::FanOutObserver> feedback_observers_;  // the metrics and reach_
  std::unique_ptr<feedback::FeedbackServer> feedback_;
  std::atomic<int> feedback_port_{0};
  bool endpoint_published_ = false;  // under mu_
  absl::Time endpoint_error_logged_ = absl::InfinitePast();
  std::unique_ptr<HttpEndpoints> endpoints_;  // last member: probes read the others

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;  // guarded by mu_
  bool leading_ = false;         // guarded by mu_
  std::atomic<bool> stopping_{false}, workers_running_{false}, elector_running_{false};
};

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_PROCESS_H_
