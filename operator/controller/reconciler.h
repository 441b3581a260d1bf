// The BoosterProfile reconciler: the thin I/O shell around rollout::Reconcile. For one
// profile key it reads the profile, its target and canary Deployments and any HPA that
// scales the target from informer stores, lets the search (operator/search/driver.h) pick
// the tuning a search profile rolls out, asks the state machine for the next status and
// actions, writes the status first (PUT /status with the resourceVersion read; a 409 means
// nothing is acted on and the key is retried), then records the pass's Events, and only
// then carries out the actions in order with the Kubernetes client. The first failing
// action ends the reconcile with an error; the next one recomputes the actions from the
// persisted status, and they are idempotent (docs/rollout.md, "The reconciler contract").
// An Event that could not be recorded is kept and retried first on the profile's next
// pass, under the same name, so a transition's Event is neither lost when an action fails
// nor recorded twice. A profile another operator instance claimed gets nothing written:
// it is reported once (log, Event, the observer's Foreign).
//
//   ProfileReconciler r(&client, {&profiles, &deployments, &hpas}, &events, &verdicts, &clock);
//   Controller c(&clock, [&](const std::string& key) { return r.Reconcile(key); });
//   deployments.AddEventHandler(EnqueueProfilesOf(&profiles.store(), ObjectKind::kDeployment, &c));
#ifndef BOOSTER_OPERATOR_CONTROLLER_RECONCILER_H_
#define BOOSTER_OPERATOR_CONTROLLER_RECONCILER_H_

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/controller/go_facts_memo.h"
#include "operator/kube/client.h"
#include "operator/kube/controller.h"
#include "operator/kube/events.h"
#include "operator/kube/informer.h"
#include "operator/kube/store.h"
#include "operator/rollout/go_facts.h"
#include "operator/rollout/state_machine.h"
#include "operator/rollout/verdict.h"

namespace booster::controller {

using kube::Json;
using kube::ObjectPtr;

inline const kube::Resource kBoosterProfiles{"booster.dev", "v1alpha1", "boosterprofiles", true};
inline const kube::Resource kReplicaSets{"apps", "v1", "replicasets", true};
inline const kube::Resource kHorizontalPodAutoscalers{"autoscaling", "v2",
                                                      "horizontalpodautoscalers", true};
// Shared analysis templates (operator/rollout/profile/analysis_template.h).
inline const kube::Resource kBoosterAnalysisTemplates{"booster.dev", "v1alpha1",
                                                      "boosteranalysistemplates", true};
inline const kube::Resource kBoosterClusterAnalysisTemplates{
    "booster.dev", "v1alpha1", "boosterclusteranalysistemplates", false};

// Index of the profile store: "namespace/deployment" of spec.targetRef.
inline constexpr char kTargetIndex[] = "booster.dev/target";
std::vector<std::string> ProfileTargetIndexFunc(const Json& profile);

enum class ObjectKind {
  kDeployment,
  kReplicaSet,
  kPod,
  kHpa,
  kAnalysisTemplate,
  kClusterAnalysisTemplate
};

// Keys ("namespace/name") of the profiles an event on `obj` concerns: a target Deployment
// (through kTargetIndex), a canary Deployment (its profile label), the ReplicaSets of
// either (their owning Deployment), pods (the booster.dev/profile annotation the
// enrolled template carries), HPAs (their scaleTargetRef) and analysis templates (the
// profiles whose spec.rollout.analysis.templateRef names them).
std::vector<std::string> ProfileKeysFor(const kube::Store& profiles, ObjectKind kind,
                                        const Json& obj);

// Informer handlers that enqueue the keys of ProfileKeysFor on every add, update and
// delete. `profiles` and `controller` are not owned.
kube::EventHandlers EnqueueProfilesOf(const kube::Store* profiles, ObjectKind kind,
                                      kube::Controller* controller);
// Handlers of the profile informer itself: enqueue the object's own key.
kube::EventHandlers EnqueueSelf(kube::Controller* controller);

// Sees the outcome of every reconcile (for metrics). Called from worker threads.
class ReconcileObserver {
 public:
  virtual ~ReconcileObserver() = default;
  // `obs` is what the pass saw of the target and the canary (their templates name the
  // template hash each arm's agents report under); `analysis` the analysis the pass judged
  // with (a shared template merged in), null when the spec is invalid.
  virtual void Reconciled(const std::string& ns, const std::string& name,
                          const rollout::RolloutStatus& status, const rollout::Observations& obs,
                          const rollout::AnalysisSpec* analysis) = 0;
  // The profile is gone (deleted, or its finalizer removed).
  virtual void Forgotten(const std::string& ns, const std::string& name) = 0;
  // The profile is managed by another operator instance, `instance`: this one leaves it.
  virtual void Foreign(const std::string& ns, const std::string& name,
                       const std::string& instance) {
    (void)instance;
    Forgotten(ns, name);
  }
};

// Read-your-writes over an informer store: after the reconciler writes an object, the
// store still holds the previous version until the watch delivers the new one. Reading
// that stale copy would recompute actions from an outdated status (and, say, scale a
// canary back down a step). The object a write returned is used instead for as long as
// the store still shows the version the write replaced.
//
// The replaced version must be read from the store *before* the request is sent: by the
// time the answer is back, the watch may already have delivered our write and even a later
// one (the Deployment controller's status update), and taking that later version for "the
// one we replaced" would serve our now-stale answer for as long as the object stays quiet.
//
//   std::string before = FreshView::Version(store, key);
//   absl::StatusOr<Json> out = client->Patch(...);
//   if (out.ok()) view.Wrote(key, before, std::make_shared<const Json>(*out));
class FreshView {
 public:
  // The resourceVersion the store holds for `key` now ("" when it has none).
  static std::string Version(const kube::Store& store, const std::string& key);
  // `before` is Version() read before the request; `after` is the object the API server
  // returned (null: deleted).
  void Wrote(const std::string& key, std::string before, ObjectPtr after);
  ObjectPtr Get(const kube::Store& store, const std::string& key);
  void Forget(const std::string& key);

 private:
  struct Entry {
    std::string replaced_rv;  // "" = the store did not have the object
    ObjectPtr after;
  };
  std::mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

struct ReconcilerStores {
  kube::Store* profiles = nullptr;
  kube::Store* deployments = nullptr;
  kube::Store* hpas = nullptr;  // may be null: no HPA is ever detected
  // Pods labelled booster.dev/arm, indexed by namespace; may be null: no pod the kubelet
  // refused is ever seen (Observations::rejected_pods).
  kube::Store* pods = nullptr;
  // BoosterAnalysisTemplates and BoosterClusterAnalysisTemplates; may be null: a profile
  // naming a template then holds with InvalidSpec "not found".
  kube::Store* analysis_templates = nullptr;
  kube::Store* cluster_analysis_templates = nullptr;
};

struct ReconcilerOptions {
  rollout::MutationOptions mutation;
  std::string field_manager = "booster-operator";
  // What the agents reported for profile "ns/name"'s current step (status.arms); unset or
  // nullopt = unknown (no window store). Called inside a reconcile: cheap, thread-safe.
  std::function<std::optional<rollout::ArmsReport>(const std::string& key)> arms;
  // What the canary agents of profile "ns/name" applied (condition TuningReached); unset
  // or nullopt = unknown. Called inside a reconcile: cheap, thread-safe.
  std::function<std::optional<rollout::ReachReport>(const std::string& key)> reach;
  // What the agents of profile "ns/name" read of its program (Go version, CPUs): to tell a
  // GOMAXPROCS that changes nothing (TuningReached, the search's skipped candidates);
  // unset or nullopt = unknown. Called inside a reconcile: cheap, thread-safe.
  std::function<std::optional<rollout::GoFacts>(const std::string& key)> go_facts;
  // The highest resident set each arm's agents reported in profile "ns/name"'s current
  // step (the memory guardrail); unset or nullopt = unknown. Cheap, thread-safe.
  std::function<std::optional<rollout::MemoryPeaks>(const std::string& key)> memory;
  // Why the profiles of namespace `ns` may not be acted on ("" = they may;
  // namespace_policy.h); unset = every namespace may. Cheap, thread-safe.
  std::function<std::string(const std::string& ns)> namespace_refusal;
  // Hands each new Event of a pass (after its status is written) to the profile's
  // notifications (operator/notify/dispatcher.h): `profile` as written, `event` the
  // kRecordEvent action. Must not block; an error (spec.notifications that cannot be read)
  // is logged and recorded as a Warning Event. Unset = no notifications.
  std::function<absl::Status(const Json& profile, const rollout::Action& event)> notify;
  // The operator queries a Prometheus (--prometheus-address). Without one, a profile with a
  // Prometheus metric in its analysis is InvalidSpec, saying where to set the address.
  bool prometheus = false;
};

class ProfileReconciler {
 public:
  // Nothing is owned; everything must outlive the reconciler. `verdicts` is called from
  // several workers at once and must be thread-safe (TimeVerdictSource is stateless).
  ProfileReconciler(kube::Client* client, ReconcilerStores stores, kube::EventRecorder* events,
                    rollout::VerdictSource* verdicts, Clock* clock,
                    ReconcilerOptions options = {}, ReconcileObserver* observer = nullptr);

  // One level-based pass over the profile `key`. Errors are retried by the caller with
  // backoff: kAborted after a conflict (409, or a failed JSON-patch test: 422), the
  // client's status for anything else.
  absl::StatusOr<kube::Result> Reconcile(const std::string& key);

 private:
  absl::Status Execute(const rollout::Action& action, const std::string& ns, Json* profile);
  absl::Status PatchProfileFinalizer(bool add, const std::string& ns, Json* profile);
  ObjectPtr Deployment(const std::string& ns, const std::string& name);
  // The HPA whose scaleTargetRef is `target`: its name ("" = none), minReplicas and the
  // desiredReplicas of its status (0 = not published yet).
  struct HpaFacts {
    std::string name;
    int32_t min = 0;
    int32_t desired = 0;
  };
  HpaFacts HpaFor(const std::string& ns, const std::string& target) const;
  // Hands one new Event to options_.notify; reports what it refused.
  void Notify(const std::string& key, const Json& profile, const rollout::Action& event);
  // Records the Events of the pass after the ones an earlier pass could not record.
  void RecordEvents(const std::string& key, const Json& profile,
                    const std::vector<rollout::Action>& fresh, absl::Time planned);
  // Logs and announces (once per instance) that `claimer` manages the profile.
  void ReportForeign(const std::string& key, const Json& profile, const std::string& claimer);
  // Pods of profile `key` the kubelet refused (rollout::ObserveRejectedPod).
  std::vector<rollout::RejectedPod> RejectedPods(const std::string& ns,
                                                 const std::string& key) const;

  kube::Client* const client_;
  const ReconcilerStores stores_;
  kube::EventRecorder* const events_;
  rollout::VerdictSource* const verdicts_;
  Clock* const clock_;
  const ReconcilerOptions options_;
  ReconcileObserver* const observer_;
  FreshView fresh_profiles_;
  FreshView fresh_deployments_;
  struct PendingEvent {
    rollout::Action action;
    std::string id;  // the Event's name suffix: the same on every attempt
    int attempts = 0;
  };
  std::mutex events_mu_;
  std::map<std::string, std::vector<PendingEvent>> unsent_events_ ABSL_GUARDED_BY(events_mu_);
  std::map<std::string, std::string> foreign_reported_ ABSL_GUARDED_BY(events_mu_);
  GoFactsMemo go_facts_;
};

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_RECONCILER_H_
