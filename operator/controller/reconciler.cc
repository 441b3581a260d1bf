#include "operator/controller/reconciler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/crash_hook.h"
#include "operator/controller/log.h"
#include "operator/kube/api_status.h"
#include "operator/kube/helpers.h"
#include "operator/kube/json.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/analysis_template.h"
#include "operator/rollout/profile/hash.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/search/driver.h"

namespace booster::controller {
namespace {

using rollout::Action;
using rollout::ActionType;

constexpr char kCanarySuffix[] = "-booster";
constexpr char kBaselineSuffix[] = "-booster-baseline";

std::string Key(absl::string_view ns, absl::string_view name) {
  return ns.empty() ? std::string(name) : absl::StrCat(ns, "/", name);
}

std::string Rv(const ObjectPtr& obj) {
  return obj == nullptr ? "" : kube::JsonString(*obj, "/metadata/resourceVersion");
}

// A failed JSON-patch "test" (the target was re-created or claimed by another profile, a
// finalizer moved) comes back as 422, a failed delete precondition or a name already taken
// as 409; each means: re-read and decide again.
absl::Status AsRetryable(const absl::Status& s) {
  const int code = kube::HttpCode(s);
  if (code == 422 || code == 409) {
    return absl::AbortedError(absl::StrCat("precondition of the write failed: ", s.message()));
  }
  return s;
}

}  // namespace

std::vector<std::string> ProfileTargetIndexFunc(const Json& profile) {
  const std::string name = kube::JsonString(profile, "/spec/targetRef/name");
  if (name.empty()) return {};
  return {Key(kube::JsonString(profile, "/metadata/namespace"), name)};
}

std::vector<std::string> ProfileKeysFor(const kube::Store& profiles, ObjectKind kind,
                                        const Json& obj) {
  const std::string ns = kube::JsonString(obj, "/metadata/namespace");
  std::vector<std::string> keys;
  auto by_target = [&](const std::string& deployment) {
    for (const ObjectPtr& p : profiles.ByIndex(kTargetIndex, Key(ns, deployment))) {
      keys.push_back(kube::ObjectKey(*p));
    }
  };
  auto for_deployment = [&](const std::string& name) {
    by_target(name);
    // A canary is "<target>-booster", a fresh baseline "<target>-booster-baseline"; their
    // profile label names the profile directly.
    if (absl::EndsWith(name, kCanarySuffix)) {
      by_target(std::string(absl::StripSuffix(name, kCanarySuffix)));
    }
    if (absl::EndsWith(name, kBaselineSuffix)) {
      by_target(std::string(absl::StripSuffix(name, kBaselineSuffix)));
    }
  };
  switch (kind) {
    case ObjectKind::kDeployment: {
      for_deployment(kube::JsonString(obj, "/metadata/name"));
      const std::string label = kube::JsonString(obj, "/metadata/labels/booster.dev~1profile");
      if (!label.empty()) keys.push_back(Key(ns, label));
      break;
    }
    case ObjectKind::kReplicaSet: {
      const Json* owners = nullptr;
      Json::json_pointer p("/metadata/ownerReferences");
      if (obj.contains(p) && obj.at(p).is_array()) owners = &obj.at(p);
      if (owners == nullptr) break;
      for (const Json& o : *owners) {
        if (o.is_object() && o.value("kind", "") == "Deployment") {
          for_deployment(o.value("name", ""));
        }
      }
      break;
    }
    case ObjectKind::kPod: {
      // "namespace/name" of the profile, written into the enrolled template.
      const std::string profile = kube::JsonString(obj, "/metadata/annotations/booster.dev~1profile");
      if (!profile.empty()) keys.push_back(profile);
      break;
    }
    case ObjectKind::kHpa: {
      if (kube::JsonString(obj, "/spec/scaleTargetRef/kind") == "Deployment") {
        by_target(kube::JsonString(obj, "/spec/scaleTargetRef/name"));
      }
      break;
    }
    case ObjectKind::kAnalysisTemplate:
    case ObjectKind::kClusterAnalysisTemplate: {
      const bool cluster = kind == ObjectKind::kClusterAnalysisTemplate;
      const std::string name = kube::JsonString(obj, "/metadata/name");
      for (const ObjectPtr& p : profiles.List()) {
        if (!cluster && kube::JsonString(*p, "/metadata/namespace") != ns) continue;
        absl::StatusOr<std::optional<rollout::AnalysisTemplateRef>> ref =
            rollout::AnalysisTemplateRefOf(*p);
        if (ref.ok() && ref->has_value() && (*ref)->name == name &&
            ((*ref)->kind == rollout::kClusterAnalysisTemplateKind) == cluster) {
          keys.push_back(kube::ObjectKey(*p));
        }
      }
      break;
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

kube::EventHandlers EnqueueProfilesOf(const kube::Store* profiles, ObjectKind kind,
                                      kube::Controller* controller) {
  auto enqueue = [profiles, kind, controller](const ObjectPtr& obj) {
    if (obj == nullptr) return;
    for (const std::string& key : ProfileKeysFor(*profiles, kind, *obj)) controller->Enqueue(key);
  };
  kube::EventHandlers h;
  h.on_add = enqueue;
  h.on_update = [enqueue](const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
    enqueue(new_obj);
    // A target renamed away from a profile's targetRef still concerns that profile.
    if (old_obj != nullptr && new_obj != nullptr &&
        kube::JsonString(*old_obj, "/metadata/name") !=
            kube::JsonString(*new_obj, "/metadata/name")) {
      enqueue(old_obj);
    }
  };
  h.on_delete = enqueue;
  return h;
}

kube::EventHandlers EnqueueSelf(kube::Controller* controller) {
  kube::EventHandlers h;
  h.on_add = [controller](const ObjectPtr& obj) { controller->Enqueue(kube::ObjectKey(*obj)); };
  h.on_update = [controller](const ObjectPtr&, const ObjectPtr& obj) {
    controller->Enqueue(kube::ObjectKey(*obj));
  };
  h.on_delete = [controller](const ObjectPtr& obj) { controller->Enqueue(kube::ObjectKey(*obj)); };
  return h;
}

std::string FreshView::Version(const kube::Store& store, const std::string& key) {
  return store.ResourceVersion(key);
}

void FreshView::Wrote(const std::string& key, std::string before, ObjectPtr after) {
  std::lock_guard<std::mutex> l(mu_);
  entries_[key] = Entry{std::move(before), std::move(after)};
}

ObjectPtr FreshView::Get(const kube::Store& store, const std::string& key) {
  ObjectPtr cached = store.Get(key);
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return cached;
  if (Rv(cached) == it->second.replaced_rv && Rv(cached) != Rv(it->second.after)) {
    return it->second.after;  // the store has not caught up with our write yet
  }
  entries_.erase(it);
  return cached;
}

void FreshView::Forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  entries_.erase(key);
}

ProfileReconciler::ProfileReconciler(kube::Client* client, ReconcilerStores stores,
                                     kube::EventRecorder* events,
                                     rollout::VerdictSource* verdicts, Clock* clock,
                                     ReconcilerOptions options, ReconcileObserver* observer)
    : client_(client),
      stores_(stores),
      events_(events),
      verdicts_(verdicts),
      clock_(clock),
      options_(std::move(options)),
      observer_(observer) {}

ObjectPtr ProfileReconciler::Deployment(const std::string& ns, const std::string& name) {
  if (name.empty()) return nullptr;
  return fresh_deployments_.Get(*stores_.deployments, Key(ns, name));
}

std::vector<rollout::RejectedPod> ProfileReconciler::RejectedPods(const std::string& ns,
                                                                   const std::string& key) const {
  std::vector<rollout::RejectedPod> out;
  if (stores_.pods == nullptr) return out;
  for (const ObjectPtr& pod : stores_.pods->ByIndex(kube::kNamespaceIndex, ns)) {
    if (kube::JsonString(*pod, "/metadata/annotations/booster.dev~1profile") != key) continue;
    if (std::optional<rollout::RejectedPod> r = rollout::ObserveRejectedPod(*pod)) {
      out.push_back(*std::move(r));
    }
  }
  return out;
}

ProfileReconciler::HpaFacts ProfileReconciler::HpaFor(const std::string& ns,
                                                      const std::string& target) const {
  if (stores_.hpas == nullptr || target.empty()) return {};
  std::vector<HpaFacts> found;
  for (const ObjectPtr& h : stores_.hpas->ByIndex(kube::kNamespaceIndex, ns)) {
    if (kube::JsonString(*h, "/spec/scaleTargetRef/kind") == "Deployment" &&
        kube::JsonString(*h, "/spec/scaleTargetRef/name") == target) {
      HpaFacts f{kube::JsonString(*h, "/metadata/name"), 1};  // minReplicas: the API's default
      Json::json_pointer mp("/spec/minReplicas"), dp("/status/desiredReplicas");
      if (h->contains(mp) && h->at(mp).is_number_integer()) f.min = h->at(mp).get<int32_t>();
      if (h->contains(dp) && h->at(dp).is_number_integer()) f.desired = h->at(dp).get<int32_t>();
      found.push_back(f);
    }
  }
  if (found.empty()) return {};
  // Deterministic when (wrongly) several exist.
  std::sort(found.begin(), found.end(),
            [](const HpaFacts& a, const HpaFacts& b) { return a.name < b.name; });
  return found.front();
}

void ProfileReconciler::RecordEvents(const std::string& key, const Json& profile,
                                     const std::vector<Action>& fresh, absl::Time planned) {
  if (events_ == nullptr) return;
  std::vector<PendingEvent> todo;
  {
    std::lock_guard<std::mutex> l(events_mu_);
    auto it = unsent_events_.find(key);
    if (it != unsent_events_.end()) {
      todo = std::move(it->second);
      unsent_events_.erase(it);
    }
  }
  const std::string uid = kube::JsonString(profile, "/metadata/uid");
  const int64_t nanos = absl::ToUnixNanos(planned);
  int index = 0;
  for (const Action& a : fresh) {
    if (a.type != ActionType::kRecordEvent) continue;
    // Unique per profile, pass and place in the pass; the same on every retry.
    const std::string id = rollout::Fnv1aHex(absl::StrCat(uid, "/", nanos, "/", index++));
    todo.push_back(PendingEvent{a, id, 0});
    Notify(key, profile, a);
  }
  std::vector<PendingEvent> failed;
  for (PendingEvent& e : todo) {
    absl::Status s = events_->Event(profile, e.action.event_type, e.action.reason,
                                    e.action.message, e.id);
    if (s.ok()) continue;
    // Kept for the next pass; after 10 attempts (about that many backoffs) it is dropped.
    if (++e.attempts < 10) {
      failed.push_back(std::move(e));
    }
    Log(Level::kWarning, "event not recorded",
        {{"profile", key},
         {"reason", e.action.reason},
         {"error", s.ToString()},
         {"retry", e.attempts < 10 ? "yes" : "no, dropped"}});
  }
  if (failed.empty()) return;
  std::lock_guard<std::mutex> l(events_mu_);
  std::vector<PendingEvent>& q = unsent_events_[key];
  q.insert(q.begin(), std::make_move_iterator(failed.begin()),
           std::make_move_iterator(failed.end()));
}

void ProfileReconciler::Notify(const std::string& key, const Json& profile, const Action& event) {
  if (!options_.notify) return;
  absl::Status s = options_.notify(profile, event);
  if (s.ok()) return;
  Log(Level::kWarning, "notifications not sent",
      {{"profile", key}, {"reason", event.reason}, {"error", s.ToString()}});
  if (events_ == nullptr) return;
  absl::Status e = events_->Event(
      profile, "Warning", "NotificationsInvalid",
      absl::StrCat("the ", event.reason, " notification was not sent: ", s.message()));
  if (!e.ok()) Log(Level::kWarning, "event not recorded", {{"profile", key}, {"error", e.ToString()}});
}

void ProfileReconciler::ReportForeign(const std::string& key, const Json& profile,
                                      const std::string& claimer) {
  {
    std::lock_guard<std::mutex> l(events_mu_);
    std::string& reported = foreign_reported_[key];
    if (reported == claimer) return;
    reported = claimer;
    unsent_events_.erase(key);
  }
  const std::string msg = absl::StrCat(
      "managed by operator instance ", claimer, " (annotation ", rollout::kInstanceAnnotation,
      "); instance ", options_.mutation.instance,
      " writes nothing to it. To hand it over, set the annotation to the other instance's name");
  Log(Level::kInfo, "profile managed by another instance",
      {{"profile", key}, {"instance", claimer}, {"this_instance", options_.mutation.instance}});
  if (events_ != nullptr) {
    absl::Status s = events_->Event(profile, "Normal", "ManagedElsewhere", msg);
    if (!s.ok()) {
      Log(Level::kWarning, "event not recorded", {{"profile", key}, {"error", s.ToString()}});
    }
  }
  Action a;
  a.type = ActionType::kRecordEvent;
  a.event_type = "Normal";
  a.reason = "ManagedElsewhere";
  a.message = msg;
  Notify(key, profile, a);
}

absl::StatusOr<kube::Result> ProfileReconciler::Reconcile(const std::string& key) {
  const std::string ns(key.substr(0, key.find('/')));
  const std::string name = key.find('/') == std::string::npos ? key : key.substr(key.find('/') + 1);
  ObjectPtr cached = fresh_profiles_.Get(*stores_.profiles, key);
  if (cached == nullptr) {
    fresh_profiles_.Forget(key);
    {
      std::lock_guard<std::mutex> l(events_mu_);
      unsent_events_.erase(key);
      foreign_reported_.erase(key);
    }
    go_facts_.Forget(key);
    if (observer_ != nullptr) observer_->Forgotten(ns, name);
    return kube::Result::Done();
  }
  // A shared analysis template (spec.rollout.analysis.templateRef) is merged in first: the
  // profile is judged as if its block were written in it. The object written back is always
  // the profile as stored (`cached`).
  const rollout::ResolvedProfile resolved = rollout::ResolveAnalysisTemplate(
      *cached,
      [this](const rollout::AnalysisTemplateRef& ref, const std::string& in) -> ObjectPtr {
        const bool cluster = ref.kind == rollout::kClusterAnalysisTemplateKind;
        kube::Store* s = cluster ? stores_.cluster_analysis_templates : stores_.analysis_templates;
        return s == nullptr ? nullptr : s->Get(cluster ? ref.name : Key(in, ref.name));
      });
  absl::StatusOr<rollout::Profile> profile = rollout::ParseProfile(resolved.ToParse(*cached));
  if (!profile.ok()) {
    Log(Level::kWarning, "not a BoosterProfile; ignored",
        {{"profile", key}, {"error", std::string(profile.status().message())}});
    return kube::Result::Done();
  }
  // A promoted or rolled-back profile judges nothing: a template deleted (or broken) after
  // it was used does not turn it Failed. The next rollout (a Reverify) holds on it instead.
  const bool judges_nothing = profile->status.phase == rollout::Phase::kPromoted ||
                              profile->status.phase == rollout::Phase::kRolledBack;
  if (!resolved.error.ok() && !judges_nothing) {
    profile->spec = resolved.error;  // held (in flight) or Failed, InvalidSpec, until fixed
  } else if (resolved.used && !profile->spec.ok()) {
    profile->spec = absl::InvalidArgumentError(absl::StrCat(
        profile->spec.status().message(), " (with ", resolved.used->kind, " \"",
        resolved.used->name, "\" generation ", resolved.used->generation,
        " merged into spec.rollout.analysis)"));
  }

  if (!options_.prometheus && profile->spec.ok() && !judges_nothing) {
    const std::vector<rollout::MetricSpec>& metrics = profile->spec->rollout.analysis.metrics;
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (metrics[i].prometheus_query.empty()) continue;
      profile->spec = absl::InvalidArgumentError(absl::StrCat(
          "spec.rollout.analysis.metrics[", i, "] (", metrics[i].name,
          ") is a prometheus metric, and this operator has no Prometheus to ask: set "
          "--prometheus-address (the chart's operator.prometheus.address)"));
      break;
    }
  }

  // Observations. The target's name comes from the spec, or from the raw field when the
  // spec is invalid (the machine then only needs to know whether a canary exists).
  std::string target_name = profile->spec.ok() ? profile->spec->target_ref.name
                                               : kube::JsonString(*cached, "/spec/targetRef/name");
  std::string canary_name = profile->status.canary_name;
  if (canary_name.empty() && !target_name.empty()) canary_name = target_name + kCanarySuffix;
  ObjectPtr target = Deployment(ns, target_name);
  ObjectPtr canary = Deployment(ns, canary_name);
  const HpaFacts hpa = HpaFor(ns, target_name);
  rollout::Observations obs{rollout::ObserveDeployment(target ? *target : Json(nullptr)),
                            rollout::ObserveDeployment(canary ? *canary : Json(nullptr)),
                            hpa.name};
  obs.hpa_min_replicas = hpa.min;
  obs.hpa_desired_replicas = hpa.desired;
  obs.analysis_template = resolved.error.ok() ? resolved.used : profile->status.analysis_template;
  // The fresh baseline goes with the canary (status.canaryName + "-baseline"), so a target
  // given back after targetRef moved on loses its baseline too.
  if (!canary_name.empty()) {
    ObjectPtr baseline = Deployment(ns, canary_name + "-baseline");
    obs.baseline = rollout::ObserveDeployment(baseline ? *baseline : Json(nullptr));
  }
  // A target the profile enrolled before spec.targetRef moved on: it is given back first.
  const std::string& previous = profile->status.target_name;
  if (!previous.empty() && previous != target_name) {
    ObjectPtr old = Deployment(ns, previous);
    obs.previous_target = rollout::ObserveDeployment(old ? *old : Json(nullptr));
  }

  if (options_.arms) obs.arms = options_.arms(key);
  if (options_.reach) obs.reach = options_.reach(key);
  // The facts outlive the streams they came in on (go_facts_memo.h): the search chooses its
  // next candidate when the last trial's pods are gone and the target's are not up yet.
  obs.go = go_facts_.Resolve(key, rollout::ProgramKey(obs.target.pod_template),
                             options_.go_facts ? options_.go_facts(key) : std::nullopt);
  if (options_.memory) obs.memory = options_.memory(key);
  if (options_.namespace_refusal) obs.namespace_refusal = options_.namespace_refusal(ns);
  obs.rejected_pods = RejectedPods(ns, key);
  const absl::Time now = clock_->Now();
  // The search (spec.search) first: it ends a trial whose rollout ended, starts the next,
  // and gives the state machine the profile to roll out (the running trial's tuning).
  // A candidate that changes nothing for the program the target runs is skipped, not tried.
  search::NoOpCheck no_op;
  if (obs.go.has_value() && obs.target.exists && profile->spec.ok()) {
    no_op = [&](const Json& best, const Json& trial) -> std::string {
      absl::StatusOr<rollout::ProfileSpec> a = search::TrialSpec(*profile->spec, best);
      absl::StatusOr<rollout::ProfileSpec> b = search::TrialSpec(*profile->spec, trial);
      if (!a.ok() || !b.ok()) return "";
      return rollout::TuningGoMaxProcsNoOp(
          obs.target.pod_template, a->tuning, b->tuning,
          rollout::EnrollContextFor(ns, name, *b), options_.mutation, *obs.go);
    };
  }
  search::SearchPass search = search::DriveSearch(*profile, now, no_op);
  rollout::Plan plan = rollout::Reconcile(search.profile, obs, *verdicts_, now, options_.mutation);
  if (plan.claimed_by.empty()) {
    plan.status_changed |= plan.status.search != profile->status.search;
    auto at = plan.actions.end();
    if (!plan.actions.empty() && plan.actions.back().type == ActionType::kRequeueAfter) --at;
    for (const search::SearchEvent& e : search.events) {
      Action a;
      a.type = ActionType::kRecordEvent;
      a.event_type = e.warning ? "Warning" : "Normal";
      a.reason = e.reason;
      a.message = e.message;
      at = plan.actions.insert(at, std::move(a)) + 1;
    }
  }
  const std::string phase(rollout::PhaseName(plan.status.phase));
  if (!plan.claimed_by.empty()) {
    ReportForeign(key, *cached, plan.claimed_by);
    if (observer_ != nullptr) observer_->Foreign(ns, name, plan.claimed_by);
    return kube::Result::Done();
  }
  {
    std::lock_guard<std::mutex> l(events_mu_);
    foreign_reported_.erase(key);
  }

  // 1. Status first.
  Json current = *cached;
  if (plan.status_changed) {
    Json obj = current;
    obj["status"] = rollout::StatusToJson(plan.status);
    const std::string before = FreshView::Version(*stores_.profiles, key);
    absl::StatusOr<Json> written = client_->UpdateStatus(kBoosterProfiles, ns, obj);
    if (!written.ok()) {
      if (absl::IsNotFound(written.status())) {  // deleted meanwhile: nothing left to do
        fresh_profiles_.Wrote(key, before, nullptr);
        if (observer_ != nullptr) observer_->Forgotten(ns, name);
        return kube::Result::Done();
      }
      if (kube::IsConflict(written.status())) {
        Log(Level::kDebug, "status conflict; re-reading", {{"profile", key}});
      }
      return written.status();  // nothing acted on
    }
    kube::DropManagedFields(&*written);
    common::CrashHere("BOOSTER_TEST_CRASH_AFTER_STATUS", phase);
    current = *written;
    fresh_profiles_.Wrote(key, before, std::make_shared<const Json>(current));
    const std::string from(rollout::PhaseName(profile->status.phase));
    if (plan.status.last_transition != profile->status.last_transition) {
      Log(Level::kInfo, "transition",
          {{"profile", key},
           {"from", from},
           {"phase", phase},
           {"step", absl::StrCat(plan.status.current_step)},
           {"weight", absl::StrCat(plan.status.canary_weight)},
           {"reason", plan.status.last_transition ? plan.status.last_transition->reason : ""},
           {"message", plan.status.last_transition ? plan.status.last_transition->message : ""}});
    }
  }
  if (observer_ != nullptr) {
    observer_->Reconciled(ns, name, plan.status, obs,
                          search.profile.spec.ok() ? &search.profile.spec->rollout.analysis
                                                   : nullptr);
  }

  // 2. The Events of the status just written (and any an earlier pass could not record):
  // before the actions, so a failing action loses none.
  RecordEvents(key, current, plan.actions, now);

  // 3. Then the actions, in order; the first failure ends the pass.
  kube::Result result = kube::Result::Done();
  for (const Action& a : plan.actions) {
    if (a.type == ActionType::kRequeueAfter) {
      result = kube::Result::RequeueAfter(a.delay);
      continue;
    }
    if (a.type == ActionType::kRecordEvent) continue;  // recorded above
    Log(Level::kInfo, "action",
        {{"profile", key}, {"phase", phase}, {"action", rollout::DescribeAction(a)}});
    absl::Status s = Execute(a, ns, &current);
    if (!s.ok()) {
      Log(Level::kWarning, "action failed; retrying",
          {{"profile", key},
           {"phase", phase},
           {"action", std::string(rollout::ActionTypeName(a.type))},
           {"error", s.ToString()}});
      return s;
    }
    if (a.type == ActionType::kRemoveFinalizer) {
      if (observer_ != nullptr) observer_->Forgotten(ns, name);
      std::lock_guard<std::mutex> l(events_mu_);
      unsent_events_.erase(key);
    }
  }
  return result;
}

absl::Status ProfileReconciler::PatchProfileFinalizer(bool add, const std::string& ns,
                                                      Json* profile) {
  const std::string name = kube::JsonString(*profile, "/metadata/name");
  Json patch = Json::array();
  patch.push_back({{"op", "test"},
                   {"path", "/metadata/uid"},
                   {"value", kube::JsonString(*profile, "/metadata/uid")}});
  Json::json_pointer fp("/metadata/finalizers");
  const Json finalizers =
      profile->contains(fp) && profile->at(fp).is_array() ? profile->at(fp) : Json::array();
  auto it = std::find(finalizers.begin(), finalizers.end(), Json(rollout::kFinalizer));
  if (add) {
    if (it != finalizers.end()) return absl::OkStatus();
    if (profile->contains(fp)) {
      patch.push_back({{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", rollout::kFinalizer}});
    } else {
      patch.push_back(
          {{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", {rollout::kFinalizer}}});
    }
  } else {
    if (it == finalizers.end()) return absl::OkStatus();
    const std::string path = absl::StrCat("/metadata/finalizers/", it - finalizers.begin());
    patch.push_back({{"op", "test"}, {"path", path}, {"value", rollout::kFinalizer}});
    patch.push_back({{"op", "remove"}, {"path", path}});
  }
  const std::string before = FreshView::Version(*stores_.profiles, Key(ns, name));
  absl::StatusOr<Json> out =
      client_->Patch(kBoosterProfiles, ns, name, kube::PatchType::kJson, patch);
  if (!out.ok()) {
    // Removing the finalizer of a profile that is already gone is done.
    if (!add && absl::IsNotFound(out.status())) return absl::OkStatus();
    return AsRetryable(out.status());
  }
  kube::DropManagedFields(&*out);
  *profile = *out;
  // Without finalizers a deleting profile is gone as soon as this patch lands.
  const bool gone = !add && kube::IsBeingDeleted(*out) &&
                    (!out->contains(fp) || out->at(fp).empty());
  fresh_profiles_.Wrote(Key(ns, name), before,
                        gone ? nullptr : std::make_shared<const Json>(*out));
  return absl::OkStatus();
}

absl::Status ProfileReconciler::Execute(const Action& a, const std::string& ns, Json* profile) {
  switch (a.type) {
    case ActionType::kClaimProfile: {
      const std::string name = kube::JsonString(*profile, "/metadata/name");
      const std::string before = FreshView::Version(*stores_.profiles, Key(ns, name));
      absl::StatusOr<Json> out = client_->Patch(
          kBoosterProfiles, ns, name, kube::PatchType::kJson, a.body,
          kube::PatchOptions{.field_manager = options_.field_manager});
      if (!out.ok()) return AsRetryable(out.status());
      kube::DropManagedFields(&*out);
      *profile = *out;
      fresh_profiles_.Wrote(Key(ns, name), before, std::make_shared<const Json>(*out));
      return absl::OkStatus();
    }
    case ActionType::kAddFinalizer:
      return PatchProfileFinalizer(true, ns, profile);
    case ActionType::kRemoveFinalizer:
      return PatchProfileFinalizer(false, ns, profile);
    case ActionType::kEnrollTarget:
    case ActionType::kScaleTarget:
    case ActionType::kPromoteTemplate:
    case ActionType::kRestoreTemplate:
    case ActionType::kPatchCanary:
    case ActionType::kCreateCanary:
    case ActionType::kPatchBaseline:
    case ActionType::kCreateBaseline: {
      // Every write is conditional: the JSON patches test the object's uid (and a claim its
      // resourceVersion); a create fails when the name is taken meanwhile. So an object
      // that changed hands between the observation and the write is never touched.
      const std::string before = FreshView::Version(*stores_.deployments, Key(ns, a.name));
      absl::StatusOr<Json> out =
          a.type == ActionType::kCreateCanary || a.type == ActionType::kCreateBaseline
              ? client_->Create(kube::kDeployments, ns, a.body)
              : client_->Patch(kube::kDeployments, ns, a.name, kube::PatchType::kJson, a.body,
                               kube::PatchOptions{.field_manager = options_.field_manager});
      if (!out.ok()) return AsRetryable(out.status());
      kube::DropManagedFields(&*out);
      fresh_deployments_.Wrote(Key(ns, a.name), before,
                               std::make_shared<const Json>(std::move(*out)));
      return absl::OkStatus();
    }
    case ActionType::kDeleteCanary:
    case ActionType::kDeleteBaseline: {
      const std::string before = FreshView::Version(*stores_.deployments, Key(ns, a.name));
      absl::Status s = client_->Delete(
          kube::kDeployments, ns, a.name,
          kube::DeleteOptions{.precondition_uid = a.uid, .propagation_policy = "Background"});
      if (!s.ok() && !absl::IsNotFound(s)) return AsRetryable(s);
      fresh_deployments_.Wrote(Key(ns, a.name), before, nullptr);
      return absl::OkStatus();
    }
    case ActionType::kRecordEvent: {
      if (events_ == nullptr) return absl::OkStatus();
      absl::Status s = events_->Event(*profile, a.event_type, a.reason, a.message);
      // An Event is informational: losing one never blocks the rollout.
      if (!s.ok()) {
        Log(Level::kWarning, "event not recorded",
            {{"profile", Key(ns, kube::JsonString(*profile, "/metadata/name"))},
             {"reason", a.reason},
             {"error", s.ToString()}});
      }
      return absl::OkStatus();
    }
    case ActionType::kRequeueAfter:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace booster::controller
