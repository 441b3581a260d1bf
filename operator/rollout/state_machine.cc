#include "operator/rollout/state_machine.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "operator/rollout/profile/conditions.h"
#include "operator/rollout/profile/hash.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/time_text.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {
namespace {

constexpr absl::Duration kWaitForPods = absl::Seconds(5);
constexpr absl::Duration kWaitForTarget = absl::Seconds(30);
constexpr absl::Duration kAfterTransition = absl::Seconds(1);

int32_t Int32At(const Json& j, const char* pointer) {
  Json::json_pointer p(pointer);
  if (!j.contains(p)) return 0;
  const Json& v = j.at(p);
  if (!v.is_number_integer()) return 0;
  int64_t i = v.is_number_unsigned()
                  ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT32_MAX))
                  : v.get<int64_t>();
  return static_cast<int32_t>(std::clamp<int64_t>(i, 0, INT32_MAX));
}

int64_t Int64At(const Json& j, const char* pointer) {
  Json::json_pointer p(pointer);
  if (!j.contains(p)) return 0;
  const Json& v = j.at(p);
  if (v.is_number_unsigned())
    return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX));
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

std::string StringAt(const Json& j, const char* pointer) {
  Json::json_pointer p(pointer);
  if (!j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string PointerKey(absl::string_view key) {
  return absl::StrReplaceAll(key, {{"~", "~0"}, {"/", "~1"}});
}

std::optional<Json> ParseObject(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

bool InFlight(Phase p) {
  return p == Phase::kEnrolling || p == Phase::kProgressing || p == Phase::kPaused ||
         p == Phase::kPromoting || p == Phase::kRollingBack;
}

bool Terminal(Phase p) {
  return p == Phase::kPromoted || p == Phase::kRolledBack || p == Phase::kFailed;
}

// A Deployment whose controller has caught up and whose pods all run the current
// template and are available. `marker` (if not empty) must be the template's marker.
bool Settled(const DeploymentView& d, int32_t want, absl::string_view marker) {
  return d.exists && d.observed_generation >= d.generation && d.spec_replicas == want &&
         d.updated_replicas == want && d.replicas == want && d.available_replicas == want &&
         (marker.empty() || TemplateMarker(d.pod_template) == marker);
}

// Every annotation Booster writes on a target Deployment (and the snapshots older
// operators wrote, so giving a target back removes them too).
constexpr const char* kOurAnnotations[] = {kScaledToAnnotation, kHolderAnnotation,
                                           kHolderUidAnnotation, kLegacyOriginalTemplateAnnotation,
                                           kLegacyBaselineTemplateAnnotation};

std::string AnnotationOf(const DeploymentView& d, const char* key) {
  auto it = d.annotations.find(key);
  return it == d.annotations.end() ? "" : it->second;
}

bool HasAnyOf(const DeploymentView& d) {
  for (const char* key : kOurAnnotations) {
    if (d.annotations.count(key) > 0) return true;
  }
  return false;
}

bool HasLegacyAnnotations(const DeploymentView& d) {
  return d.annotations.count(kLegacyOriginalTemplateAnnotation) > 0 ||
         d.annotations.count(kLegacyBaselineTemplateAnnotation) > 0;
}

// "BoosterProfile other", "ReplicaSet x", or "no owner".
std::string OwnerText(const DeploymentView& d) {
  for (const OwnerRef& o : d.owners) {
    if (o.controller) return absl::StrCat(o.kind, " ", o.name);
  }
  if (!d.owners.empty()) return absl::StrCat(d.owners[0].kind, " ", d.owners[0].name);
  return "no owner";
}

bool OwnedByProfileKind(const DeploymentView& d) {
  for (const OwnerRef& o : d.owners) {
    if (o.kind == kKind) return true;
  }
  return false;
}

// Builds JSON Patches for the target. Every patch starts with a test of the uid, so a
// target deleted and re-created under the same name is never patched by mistake; a new
// template is written only over the template it was planned on, and new replicas only
// over the count they were planned on, so an edit or a scale someone made after the
// observation makes the patch fail (422) instead of being overwritten.
class TargetPatch {
 public:
  explicit TargetPatch(const DeploymentView& target) : target_(target) {
    ops_.push_back({{"op", "test"}, {"path", "/metadata/uid"}, {"value", target.uid}});
  }
  // Records `meta` as the holder. Unless it already holds the target, the patch also tests
  // the resourceVersion observed: of two profiles claiming at once, the second one's test
  // fails (422) and its next reconcile sees the first one's claim.
  TargetPatch& Claim(const ProfileMeta& meta) {
    auto it = target_.annotations.find(kHolderUidAnnotation);
    const bool mine = it != target_.annotations.end() && it->second == meta.uid;
    if (!mine && !target_.resource_version.empty()) {
      ops_.push_back({{"op", "test"},
                      {"path", "/metadata/resourceVersion"},
                      {"value", target_.resource_version}});
    }
    SetAnnotation(kHolderAnnotation, meta.name);
    return SetAnnotation(kHolderUidAnnotation, meta.uid);
  }
  TargetPatch& Template(const Json& tmpl) {
    ops_.push_back({{"op", "test"}, {"path", "/spec/template"}, {"value", target_.pod_template}});
    ops_.push_back({{"op", "replace"}, {"path", "/spec/template"}, {"value", tmpl}});
    return *this;
  }
  TargetPatch& Replicas(int32_t n) {
    RawReplicas(n);
    return SetAnnotation(kScaledToAnnotation, absl::StrCat(n));
  }
  // spec.replicas alone, for unenrollment (no scaled-to marker is left behind).
  TargetPatch& RawReplicas(int32_t n) {
    TestReplicas();
    ops_.push_back({{"op", "add"}, {"path", "/spec/replicas"}, {"value", n}});
    return *this;
  }
  // The scaled-to marker for the count the target has now (enrollment: the count it is
  // taken over at), without writing the count.
  TargetPatch& MarkReplicas() {
    TestReplicas();
    return SetAnnotation(kScaledToAnnotation, absl::StrCat(target_.spec_replicas));
  }
  // Removes every Booster annotation; drops the map when nothing else is in it, so an
  // unenrolled Deployment looks exactly as before.
  TargetPatch& RemoveOurAnnotations() {
    size_t ours = 0;
    for (const char* key : kOurAnnotations) ours += target_.annotations.count(key);
    if (ours == 0) return *this;
    const Json* all = nullptr;
    Json::json_pointer ap("/metadata/annotations");
    if (target_.object.contains(ap)) all = &target_.object.at(ap);
    if (all != nullptr && all->is_object() && all->size() == ours) {
      ops_.push_back({{"op", "remove"}, {"path", "/metadata/annotations"}});
      return *this;
    }
    for (const char* key : kOurAnnotations) RemoveAnnotation(key);
    return *this;
  }
  TargetPatch& RemoveLegacyAnnotations() {
    RemoveAnnotation(kLegacyOriginalTemplateAnnotation);
    return RemoveAnnotation(kLegacyBaselineTemplateAnnotation);
  }
  TargetPatch& SetAnnotation(absl::string_view key, const std::string& value) {
    EnsureAnnotations();
    ops_.push_back(
        {{"op", "add"}, {"path", "/metadata/annotations/" + PointerKey(key)}, {"value", value}});
    return *this;
  }
  TargetPatch& RemoveAnnotation(absl::string_view key) {
    if (target_.annotations.count(std::string(key)) == 0) return *this;
    ops_.push_back({{"op", "remove"}, {"path", "/metadata/annotations/" + PointerKey(key)}});
    return *this;
  }
  Json Build() const { return ops_; }

 private:
  void TestReplicas() {
    if (replicas_tested_) return;
    replicas_tested_ = true;
    ops_.push_back(
        {{"op", "test"}, {"path", "/spec/replicas"}, {"value", target_.spec_replicas}});
  }
  void EnsureAnnotations() {
    if (annotations_ensured_) return;
    annotations_ensured_ = true;
    if (!target_.object.contains("metadata") ||
        !target_.object["metadata"].contains("annotations") ||
        !target_.object["metadata"]["annotations"].is_object()) {
      ops_.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", Json::object()}});
    }
  }

  const DeploymentView& target_;
  Json ops_ = Json::array();
  bool annotations_ensured_ = false;
  bool replicas_tested_ = false;
};

class Machine {
 public:
  Machine(const Profile& profile, const Observations& obs, VerdictSource& verdicts, absl::Time now,
          const MutationOptions& opts)
      : p_(profile),
        obs_(obs),
        verdicts_(verdicts),
        now_(now),
        opts_(opts),
        s_(profile.status),
        team_(TeamTemplate(obs.target.pod_template, opts)) {}

  Plan Run();

 private:
  // Ends `plan` with one requeue at the soonest delay any rule asked for, if one did.
  void AppendRequeue(Plan& plan) const;
  const ProfileSpec& spec() const { return *p_.spec; }
  const DeploymentView& target() const { return obs_.target; }
  const DeploymentView& canary() const { return obs_.canary; }
  int64_t gen() const { return p_.meta.generation; }
  std::string TargetName() const { return p_.spec.ok() ? spec().target_ref.name : target().name; }
  EnrollContext Ctx() const {
    if (p_.spec.ok()) return EnrollContextFor(p_.meta.namespace_, p_.meta.name, spec());
    return EnrollContext{p_.meta.namespace_, p_.meta.name, {}};
  }
  std::string Annotation(const char* key) const {
    auto it = p_.meta.annotations.find(key);
    return it == p_.meta.annotations.end() ? "" : it->second;
  }
  bool HasFinalizer() const {
    return std::find(p_.meta.finalizers.begin(), p_.meta.finalizers.end(), kFinalizer) !=
           p_.meta.finalizers.end();
  }

  void To(Phase to, std::string reason, std::string message, bool warning = false);
  void Event(bool warning, std::string reason, std::string message);
  void Requeue(absl::Duration d) {
    requeue_ = std::min(requeue_, std::max(d, absl::Milliseconds(100)));
  }
  void SetCond(absl::string_view type, bool status, absl::string_view reason,
               absl::string_view message) {
    SetCondition(s_.conditions, type, status ? "True" : "False", reason, message, gen(), now_);
  }

  // Claims the profile for this instance; false when the pass must stop here (a claim is
  // on its way, or another instance has it).
  bool ClaimProfile();
  void Finalize();
  // Ownership (docs/rollout.md). The holder of a Deployment is the profile whose uid its
  // kHolderUidAnnotation carries; a canary is ours when an owner reference names our uid.
  // A target this profile enrolled whose holder annotations someone else's write removed
  // (a `kubectl replace` of the whole Deployment) is still this profile's.
  bool HeldByMe(const DeploymentView& d) const {
    if (!d.exists) return false;
    const std::string holder = AnnotationOf(d, kHolderUidAnnotation);
    return holder == p_.meta.uid || (holder.empty() && !s_.target_uid.empty() &&
                                     d.uid == s_.target_uid && InFlightOrPromoted());
  }
  bool HeldByOther(const DeploymentView& d) const {
    const std::string holder = AnnotationOf(d, kHolderUidAnnotation);
    return d.exists && !holder.empty() && holder != p_.meta.uid;
  }
  bool InFlightOrPromoted() const { return InFlight(s_.phase) || s_.phase == Phase::kPromoted; }
  bool Owns(const DeploymentView& d) const;
  bool OwnsCanary() const { return Owns(canary()); }
  bool ForeignCanary() const { return canary().exists && !OwnsCanary(); }
  // The fresh baseline (analysis.baseline Fresh): the Deployment under its name, whether
  // it is ours, and whether this rollout's steps run one (mode Metrics, and its name is
  // not taken by a Deployment of someone else's).
  const DeploymentView& fresh() const { return obs_.baseline; }
  bool OwnsBaseline() const { return Owns(fresh()); }
  bool ForeignBaseline() const { return fresh().exists && !OwnsBaseline(); }
  bool FreshBaselineWanted() const {
    return p_.spec.ok() && spec().rollout.analysis.mode == AnalysisMode::kMetrics &&
           spec().rollout.analysis.baseline == BaselinePolicy::kFresh && !ForeignBaseline();
  }
  std::string FreshName() const {
    return s_.canary_name.empty() ? BaselineName(TargetName()) : s_.canary_name + "-baseline";
  }
  // Stands back from what another owns; true when the phase's handler must not run.
  bool CheckOwnership();
  // Sets the Conflict condition; true when it is new (so the caller announces it).
  bool ReportConflict(absl::string_view reason, const std::string& message);
  bool ReleasePreviousTarget();
  // Takes Booster's layer off the current template of `t` (a Deployment this profile
  // holds), gives it all replicas of a rollout in flight and removes Booster's
  // annotations. False when there is nothing left to do.
  bool Unenroll(const DeploymentView& t, const std::string& why);
  void HandleInvalidSpec();
  void HandleNamespaceRefused();
  bool CheckTarget();
  void MaybeRestart();
  // Starts a rollout on the target as it is now (from Pending, or after promotion on a new
  // revision with onNewRevision: Reverify). `keep_tuning`: a tuning this profile promoted
  // earlier stays on the target as the baseline arm (a rollback keeps it).
  void StartRollout(std::string reason, std::string message, bool keep_tuning);
  void Pending();
  void Enrolling();
  void Progressing();
  void Paused();
  void Promoting();
  void Promoted();
  void RollingBack();
  void Converge();
  void FinishConditions();

  void EnterStep(int step);
  void Resplit();
  void StartRollback(std::string reason, std::string message);
  // Whether status.lastDecision is a verdict of this step that dry run kept from rolling
  // back (of kind `verdict`; "" = any).
  bool DryRunRecorded(absl::string_view verdict) const;
  // The team's template changed since the rollout recorded it (a new image, `kubectl
  // rollout restart`, their manifest applied): the new revision is kept, and the canary
  // restarts on it at step 1 (or the rollout rolls back, onNewRevision: Rollback). True
  // when the phase's handler must stop here.
  bool NewRevision();
  bool CanaryRejected();
  bool CanaryNearMemoryLimit(const Json& canary);
  void ReportReach(const Json& canary, const Json& baseline);
  bool SpecChangedInFlight();
  // analysis.interval, .source, .mode or .baseline changed mid-step: the windows before and
  // after are not one experiment, so the step starts over with both arms re-templated.
  bool ExperimentChanged();
  // A replica count someone else wrote on the target is the app's new total: re-split it.
  void FollowExternalScale();
  void FollowHpaAtItsMinimum();
  bool EffectivelyPaused(std::string* why) const;
  int Weight(int step) const {
    return step >= 1 && step <= static_cast<int>(spec().rollout.steps.size())
               ? spec().rollout.steps[step - 1]
               : 0;
  }
  std::optional<int32_t> ScaledTo() const;

  // The templates of this pass, all derived from the team's template as it is now (each
  // built once per pass: s_.baseline_tuning and the spec do not change within one).
  std::optional<Tuning> BaselineTuning() const;
  const absl::StatusOr<Json>& BaselineTemplate() const;  // the target's during the rollout
  const absl::StatusOr<Json>& CanaryTemplate() const;
  const absl::StatusOr<Json>& PromotedTemplate() const;
  // The fresh baseline's (FreshBaselineTemplate of the two above).
  const absl::StatusOr<Json>& FreshTemplate() const;
  // What a rollback gives the target: the team's template, with the tuning an earlier
  // rollout promoted when there is one.
  const absl::StatusOr<Json>& RestoredTemplate() const;
  bool LayerIs(const Json& want) const {
    return LayerDifferences(target().pod_template, want, opts_).empty();
  }
  // During the steps the target must also measure as `want` does (the agents' window and
  // metrics source), so both arms' windows are alike.
  bool TargetMeasuresAs(const Json& want) const {
    return LayerIs(want) && !AgentSettingsDiffer(target().pod_template, want);
  }
  // Memoizes `build` under `slot` for the rest of the pass.
  template <typename F>
  const absl::StatusOr<Json>& Once(std::optional<absl::StatusOr<Json>>& slot, F build) const {
    if (!slot) slot = build();
    return *slot;
  }

  void Push(Action a) { actions_.push_back(std::move(a)); }
  // One patch of the target: `tmpl` (if any) over the template observed, `replicas` (if
  // >= 0; with the scaled-to marker unless `raw`), the claim, Booster's annotations removed.
  struct TargetWrite {
    ActionType type = ActionType::kScaleTarget;
    const Json* tmpl = nullptr;
    int32_t replicas = -1;
    bool raw = false;
    bool claim = false;
    bool mark = false;  // the scaled-to marker for the count it has now
    bool remove_annotations = false;
    bool remove_legacy = false;
    std::string message;
  };
  Action TargetAction(const DeploymentView& t, const TargetWrite& w) const;
  void PushScaleTarget(int32_t n);
  // Creates the canary (or the fresh baseline), or patches ours after a test of its uid; a
  // Deployment of that name that is not ours is never written.
  void PushCanary(const Json& tmpl, int32_t n);
  void PushBaseline(const Json& tmpl, int32_t n);
  // Delete ours, if it is, on the precondition of its uid.
  void PushDeleteCanary() {
    if (OwnsCanary()) PushDelete(canary(), ActionType::kDeleteCanary);
  }
  void PushDeleteBaseline() {
    if (OwnsBaseline()) PushDelete(fresh(), ActionType::kDeleteBaseline);
  }
  void PushDelete(const DeploymentView& d, ActionType type);

  const Profile& p_;
  const Observations& obs_;
  VerdictSource& verdicts_;
  const absl::Time now_;
  const MutationOptions& opts_;
  RolloutStatus s_;
  const Json team_;  // the target's template without Booster's layer
  mutable std::optional<absl::StatusOr<Json>> baseline_, canary_, promoted_, restored_, fresh_;
  std::vector<Action> actions_;
  std::vector<Action> events_;
  absl::Duration requeue_ = absl::InfiniteDuration();
  bool transitioned_ = false;
};

void Machine::Event(bool warning, std::string reason, std::string message) {
  Action a;
  a.type = ActionType::kRecordEvent;
  a.event_type = warning ? "Warning" : "Normal";
  a.reason = std::move(reason);
  a.message = std::move(message);
  events_.push_back(std::move(a));
}

void Machine::To(Phase to, std::string reason, std::string message, bool warning) {
  s_.last_transition = Transition{std::string(PhaseName(s_.phase)), std::string(PhaseName(to)),
                                  reason, message, now_};
  s_.phase = to;
  s_.phase_start_time = now_;
  if (to != Phase::kProgressing && to != Phase::kPaused) {
    s_.arms.reset();
    // The fresh baseline lives only during the steps; promotion first gives its pods back
    // to the target (the baseline is deleted before the target grows: Converge).
    if (to == Phase::kPromoting) s_.stable_replicas += s_.baseline_replicas;
    s_.baseline_replicas = 0;
  }
  transitioned_ = true;
  Event(warning, std::move(reason), std::move(message));
  events_.back().transition_to = std::string(PhaseName(to));
  Requeue(kAfterTransition);
}

std::optional<int32_t> Machine::ScaledTo() const {
  auto it = target().annotations.find(kScaledToAnnotation);
  int32_t v;
  if (it == target().annotations.end() || !absl::SimpleAtoi(it->second, &v)) return std::nullopt;
  return v;
}

std::optional<Tuning> Machine::BaselineTuning() const {
  if (s_.baseline_tuning.empty()) return std::nullopt;
  std::optional<Json> j = ParseObject(s_.baseline_tuning);
  if (!j) return std::nullopt;
  absl::StatusOr<Tuning> t = TuningFromJson(*j);
  if (!t.ok()) return std::nullopt;
  return *std::move(t);
}

const absl::StatusOr<Json>& Machine::BaselineTemplate() const {
  return Once(baseline_, [&]() -> absl::StatusOr<Json> {
    if (std::optional<Tuning> t = BaselineTuning()) {
      return TunedTemplate(team_, *t, kArmPromoted, Ctx(), opts_);
    }
    return EnrolledTemplate(team_, Ctx(), opts_);
  });
}

const absl::StatusOr<Json>& Machine::CanaryTemplate() const {
  return Once(canary_, [&] { return TunedTemplate(team_, spec().tuning, kArmCanary, Ctx(), opts_); });
}

const absl::StatusOr<Json>& Machine::PromotedTemplate() const {
  return Once(promoted_,
              [&] { return TunedTemplate(team_, spec().tuning, kArmPromoted, Ctx(), opts_); });
}

const absl::StatusOr<Json>& Machine::FreshTemplate() const {
  return Once(fresh_, [&]() -> absl::StatusOr<Json> {
    const absl::StatusOr<Json>& b = BaselineTemplate();
    if (!b.ok()) return b.status();
    const absl::StatusOr<Json>& c = CanaryTemplate();
    if (!c.ok()) return c.status();
    return FreshBaselineTemplate(*b, *c);
  });
}

const absl::StatusOr<Json>& Machine::RestoredTemplate() const {
  return Once(restored_, [&]() -> absl::StatusOr<Json> {
    if (BaselineTuning()) return BaselineTemplate();
    return team_;
  });
}

bool Machine::Owns(const DeploymentView& d) const {
  if (!d.exists || p_.meta.uid.empty()) return false;
  for (const OwnerRef& o : d.owners) {
    if (o.uid == p_.meta.uid) return true;
  }
  return false;
}

bool Machine::ReportConflict(absl::string_view reason, const std::string& message) {
  const Condition* c = FindCondition(s_.conditions, kConditionConflict);
  const bool fresh =
      c == nullptr || c->status != "True" || c->reason != reason || c->message != message;
  SetCond(kConditionConflict, true, reason, message);
  return fresh;
}

// One Deployment, one rollout; and nothing that is not ours is ever written or deleted.
bool Machine::CheckOwnership() {
  const DeploymentView& t = target();
  if (HeldByOther(t)) {
    const std::string holder = AnnotationOf(t, kHolderAnnotation);
    const std::string msg = absl::StrCat(
        "Deployment ", t.name, " is held by BoosterProfile ", holder, " (uid ",
        AnnotationOf(t, kHolderUidAnnotation),
        "): one Deployment, one rollout. This profile changes nothing and starts by itself "
        "once ",
        holder, " is deleted, targets another Deployment or rolls back");
    const bool fresh = ReportConflict("TargetHeld", msg);
    PushDeleteCanary();  // only ever one of ours
    switch (s_.phase) {
      case Phase::kPending:
        // Recorded as a transition (Pending -> Pending) so `kubectl get bp -o wide` shows
        // the reason; once, not on every pass.
        if (fresh || !s_.last_transition || s_.last_transition->reason != "TargetHeld") {
          To(Phase::kPending, "TargetHeld", msg, /*warning=*/true);
        }
        Requeue(kWaitForTarget);
        break;
      case Phase::kEnrolling:
        // Lost the race to claim it (our enrollment patch failed its test): back off.
        s_.target_uid.clear();
        s_.target_name.clear();
        To(Phase::kPending, "TargetHeld", msg, /*warning=*/true);
        break;
      case Phase::kProgressing:
      case Phase::kPaused:
      case Phase::kPromoting:
      case Phase::kRollingBack:
        // Only a hand-edited annotation gets here: the target is left to its holder.
        s_.canary_replicas = 0;
        s_.canary_weight = 0;
        To(Phase::kFailed, "TargetHeld", msg, /*warning=*/true);
        break;
      case Phase::kPromoted:
      case Phase::kRolledBack:
      case Phase::kFailed:
        if (fresh) Event(true, "TargetHeld", msg);
        break;
    }
    return true;
  }
  if (ForeignCanary()) {
    const DeploymentView& c = canary();
    const std::string msg = absl::StrCat(
        "Deployment ", c.name, ", the name of this profile's canary, exists and was not created "
        "by this profile (owner: ", OwnerText(c),
        "); Booster never changes or deletes it. Rename or delete that Deployment and the "
        "rollout starts by itself");
    const bool fresh = ReportConflict("CanaryNameTaken", msg);
    switch (s_.phase) {
      case Phase::kPending:
        // Another profile's canary on its way out (that profile let go) is waited for.
        if (c.deleting || OwnedByProfileKind(c)) {
          if (fresh) Event(true, "CanaryNameTaken", msg);
          Requeue(kWaitForPods);
        } else {
          To(Phase::kFailed, "CanaryNameTaken", msg + "; nothing was changed", /*warning=*/true);
        }
        return true;
      case Phase::kEnrolling:
      case Phase::kProgressing:
      case Phase::kPaused:
      case Phase::kPromoting:
        StartRollback("CanaryNameTaken", msg + "; the target is restored");
        return true;
      case Phase::kRollingBack:
        return false;  // restoring the target needs no canary
      case Phase::kPromoted:
      case Phase::kRolledBack:
      case Phase::kFailed:
        if (fresh) Event(true, "CanaryNameTaken", msg);
        return false;
    }
    return true;
  }
  if (ForeignBaseline() && p_.spec.ok() &&
      spec().rollout.analysis.mode == AnalysisMode::kMetrics &&
      spec().rollout.analysis.baseline == BaselinePolicy::kFresh) {
    const DeploymentView& b = fresh();
    const std::string msg = absl::StrCat(
        "Deployment ", b.name, ", the name of this profile's fresh baseline, exists and was not "
        "created by this profile (owner: ", OwnerText(b),
        "); Booster never changes or deletes it, and the steps compare the canary with the "
        "target's pods instead. Rename or delete that Deployment to get a fresh baseline");
    if (ReportConflict("BaselineNameTaken", msg)) Event(true, "BaselineNameTaken", msg);
    return false;
  }
  const Condition* c = FindCondition(s_.conditions, kConditionConflict);
  if (c != nullptr && c->status == "True") SetCond(kConditionConflict, false, "Resolved", "");
  return false;
}

// spec.targetRef names another Deployment than the one this profile enrolled: let go of
// the old one exactly as a deletion would, then start over on the new one.
bool Machine::ReleasePreviousTarget() {
  if (s_.target_name.empty() || s_.target_name == spec().target_ref.name) return false;
  const std::string why = absl::StrCat("spec.targetRef now names ", spec().target_ref.name,
                                       "; Deployment ", s_.target_name, " is given back first");
  bool pending = false;
  if (OwnsCanary()) {  // the canary observed under status.canaryName: the old target's
    PushDeleteCanary();
    pending = true;
  }
  if (OwnsBaseline()) {  // and its fresh baseline
    PushDeleteBaseline();
    pending = true;
  }
  const DeploymentView& old = obs_.previous_target;
  if (HeldByMe(old) && old.uid == s_.target_uid) pending |= Unenroll(old, why);
  if (pending) {
    Event(false, "ReleasingTarget", why);
    Requeue(kWaitForPods);
    return true;
  }
  s_.target_name.clear();
  s_.target_uid.clear();
  s_.canary_name.clear();
  s_.current_step = 0;
  s_.canary_weight = 0;
  s_.canary_replicas = 0;
  s_.baseline_replicas = 0;
  s_.extensions = 0;
  s_.team_template_hash.clear();
  s_.baseline_tuning.clear();
  s_.rollout_hash.clear();
  To(Phase::kPending, "TargetChanged",
     absl::StrCat("Deployment ", old.exists ? old.name : std::string("(gone)"),
                  " is given back; starting on ", spec().target_ref.name));
  return true;
}

Action Machine::TargetAction(const DeploymentView& t, const TargetWrite& w) const {
  TargetPatch patch(t);
  if (w.claim) patch.Claim(p_.meta);
  if (w.tmpl != nullptr) patch.Template(*w.tmpl);
  if (w.replicas >= 0) {
    if (w.raw) {
      patch.RawReplicas(w.replicas);
    } else {
      patch.Replicas(w.replicas);
    }
  } else if (w.mark) {
    patch.MarkReplicas();
  }
  if (w.remove_annotations) {
    patch.RemoveOurAnnotations();
  } else if (w.remove_legacy) {
    patch.RemoveLegacyAnnotations();
  }
  Action a;
  a.type = w.type;
  a.name = t.name;
  a.replicas = w.replicas;
  a.body = patch.Build();
  a.message = w.message;
  return a;
}

bool Machine::Unenroll(const DeploymentView& t, const std::string& why) {
  const bool layered = HasLayer(t.pod_template);
  if (!layered && !HasAnyOf(t)) return false;
  const Json team = TeamTemplate(t.pod_template, opts_);
  TargetWrite w{.type = ActionType::kRestoreTemplate, .remove_annotations = true, .message = why};
  if (layered) w.tmpl = &team;
  // Mid-rollout the target holds only part of N; give it all back.
  if (InFlight(s_.phase) && t.spec_replicas != s_.total_replicas) {
    w.replicas = s_.total_replicas;
    w.raw = true;
  }
  Action a = TargetAction(t, w);
  a.replicas = InFlight(s_.phase) ? s_.total_replicas : -1;
  Push(std::move(a));
  return true;
}

bool Machine::EffectivelyPaused(std::string* why) const {
  if (spec().rollout.paused) {
    *why = "spec.rollout.paused is true";
    return true;
  }
  if (Annotation(kAnnotationPaused) == "true") {
    *why = absl::StrCat("annotation ", kAnnotationPaused, " is \"true\"");
    return true;
  }
  if (spec().rollout.hpa_policy == HpaPolicy::kPause && !obs_.hpa_name.empty()) {
    *why = absl::StrCat("HorizontalPodAutoscaler ", obs_.hpa_name,
                        " targets the Deployment and spec.rollout.hpaPolicy is Pause");
    return true;
  }
  return false;
}

void Machine::Resplit() {
  s_.baseline_replicas = 0;
  if (s_.phase == Phase::kPromoting) {
    s_.canary_replicas = std::min(s_.canary_replicas, s_.total_replicas);
    s_.stable_replicas = s_.total_replicas - s_.canary_replicas;
    return;
  }
  if (s_.current_step <= 0) {
    s_.canary_replicas = 0;
    s_.stable_replicas = s_.total_replicas;
    return;
  }
  const int32_t floor =
      obs_.hpa_name.empty() ? 0 : std::max<int32_t>(obs_.hpa_min_replicas, s_.target_floor);
  if (FreshBaselineWanted()) {
    const ArmSplit split = SplitWithBaseline(s_.total_replicas, s_.canary_weight, floor);
    s_.stable_replicas = split.stable;
    s_.canary_replicas = split.canary;
    s_.baseline_replicas = split.baseline;
    return;
  }
  const Split split = SplitReplicas(s_.total_replicas, s_.canary_weight, floor);
  s_.stable_replicas = split.stable;
  s_.canary_replicas = split.canary;
}

void Machine::EnterStep(int step) {
  s_.experiment_hash = ExperimentHash(spec());
  s_.current_step = step;
  s_.canary_weight = Weight(step);
  Resplit();
  s_.step_start_time = now_;
  s_.analysis_start_time = absl::InfinitePast();
  s_.not_ready_since = absl::InfinitePast();
  s_.extensions = 0;
  s_.arms.reset();
}

void Machine::StartRollback(std::string reason, std::string message) {
  s_.canary_weight = 0;
  s_.canary_replicas = 0;
  s_.baseline_replicas = 0;
  s_.stable_replicas = s_.total_replicas;
  s_.analysis_start_time = absl::InfinitePast();
  s_.step_start_time = now_;
  To(Phase::kRollingBack, std::move(reason), std::move(message), /*warning=*/true);
}

bool Machine::NewRevision() {
  const std::string hash = TemplateHash(team_);
  if (s_.team_template_hash.empty() || hash == s_.team_template_hash) return false;
  s_.team_template_hash = hash;
  const std::string what = absl::StrCat("the pod template of Deployment ", TargetName(),
                                        " was changed by someone else (a new revision)");
  SetCond(kConditionTargetModified, true, "NewRevision", what);
  if (s_.phase == Phase::kEnrolling) {
    // No canary yet: the new revision is simply the one enrolled.
    Event(false, "NewRevision", absl::StrCat(what, "; enrolling the new revision"));
    return false;
  }
  if (spec().rollout.on_new_revision == NewRevisionPolicy::kRollback) {
    StartRollback("TargetModified",
                  absl::StrCat(what, "; onNewRevision is Rollback: the canary is deleted and the "
                                     "target keeps the new revision without the tuning"));
    return true;
  }
  if (s_.phase == Phase::kPaused) {
    if (s_.current_step > 0) EnterStep(1);
    Event(false, "NewRevision",
          absl::StrCat(what, "; new revision, restarting: still paused, back at step 1 with "
                             "both arms on it"));
    return false;
  }
  EnterStep(1);
  To(Phase::kProgressing, "NewRevision",
     absl::StrCat(what, "; new revision, restarting the canary on it: step 1 of ",
                  spec().rollout.steps.size(), ": ", s_.canary_weight, "% on the canary (",
                  s_.canary_replicas, " of ", s_.total_replicas,
                  "), both arms on the new revision"));
  return true;
}

// The kubelet refused a canary pod for a reason of the tuning's own (a sysctl the node
// does not allow), or a canary container was OOM-killed (memory is a guardrail of its own:
// a tuning that outgrows the limit fails at once, not after the step): waiting for the
// progress deadline only keeps failed pods coming. Roll back now and say why.
bool Machine::CanaryRejected() {
  for (const RejectedPod& pod : obs_.rejected_pods) {
    if (pod.arm != kArmCanary) continue;
    std::string msg = absl::StrCat(
        "step ", s_.current_step, ": the kubelet refused canary pod ", pod.name, " (",
        pod.reason, ": ", pod.message,
        "); this tuning cannot run on the node, so the target is restored");
    if (pod.reason == "SysctlForbidden") {
      absl::StrAppend(&msg,
                      ". Allow the sysctl on the nodes (kubelet --allowed-unsafe-sysctls) or "
                      "remove it from spec.tuning.sysctls");
    } else if (pod.reason == "OOMKilled") {
      absl::StrAppend(&msg,
                      ". The tuning lets the app use more memory than the pod may (a GOMEMLIMIT "
                      "above the limit, GOGC off, another allocator): raise the memory limit "
                      "or change the tuning");
    }
    SetCond(kConditionTuningRejected, true, pod.reason, msg);
    StartRollback(pod.reason, msg);
    return true;
  }
  return false;
}

// Memory is a guardrail of its own: a canary whose resident set reached
// kMemoryNearLimitShare of its memory limit (the tuned containers' limits summed: the agent
// sums their processes) while the baseline's stayed below is one allocation from the OOM
// killer. Roll back now rather than wait for the kill. A baseline that is as close (the
// team's own sizing) says nothing of the tuning.
bool Machine::CanaryNearMemoryLimit(const Json& canary) {
  if (!obs_.memory.has_value() || !obs_.memory->canary.has_value()) return false;
  std::optional<int64_t> limit = MemoryLimitBytes(canary, Ctx().containers);
  if (!limit || *limit <= 0) return false;
  const double near = kMemoryNearLimitShare * static_cast<double>(*limit);
  const ArmMemoryPeak& c = *obs_.memory->canary;
  if (c.rss_bytes < near) return false;
  if (obs_.memory->baseline.has_value() && obs_.memory->baseline->rss_bytes >= near) return false;
  auto mib = [](double b) { return absl::StrFormat("%.1f MiB", b / 1048576.0); };
  std::string msg = absl::StrCat(
      "step ", s_.current_step, ": canary pod ", c.pod, " reached a resident set of ",
      mib(c.rss_bytes), ", ", static_cast<int>(std::lround(c.rss_bytes * 100 / *limit)),
      "% of its memory limit ", mib(static_cast<double>(*limit)));
  if (obs_.memory->baseline.has_value()) {
    absl::StrAppend(&msg, " (the baseline's peak: ", mib(obs_.memory->baseline->rss_bytes), ")");
  }
  absl::StrAppend(&msg,
                  "; the tuning lets the app use more memory than the pod may, so the target is "
                  "restored before the OOM killer acts. Raise the memory limit or change the "
                  "tuning (a GOMEMLIMIT below the limit, a lower GOGC)");
  SetCond(kConditionTuningRejected, true, "MemoryNearLimit", msg);
  StartRollback("MemoryNearLimit", msg);
  return true;
}

// Surfaces the knobs the canary's agents could not apply, and a GOMAXPROCS that changes
// nothing for the program (condition TuningReached).
void Machine::ReportReach(const Json& canary, const Json& baseline) {
  std::string no_op;
  if (obs_.go.has_value() && !spec().tuning.go.gomaxprocs.empty()) {
    no_op = GoMaxProcsNoOp(baseline, canary, Ctx().containers, *obs_.go);
  }
  const bool reported = obs_.reach.has_value() && obs_.reach->pods > 0;
  if (!reported && no_op.empty()) return;
  std::vector<std::string> parts;
  if (reported) {
    const ReachReport& r = *obs_.reach;
    for (const UnreachedKnob& k : r.not_reached) {
      parts.push_back(absl::StrCat(k.knob, " ", k.outcome == "Failed" ? "failed" : "not reached",
                                   " in ", k.pods, " of ", r.pods, " canary pods: ", k.reason));
    }
  }
  const bool not_reached = !parts.empty();
  if (!not_reached && no_op.empty()) {
    SetCond(kConditionTuningReached, true, "Reached",
            absl::StrCat("every knob took effect in the ", obs_.reach->pods,
                         " canary pods whose agents reported"));
    return;
  }
  if (!no_op.empty()) parts.push_back(absl::StrCat("runtime.go.gomaxprocs: ", no_op));
  const std::string msg = absl::StrJoin(parts, "; ");
  const Condition* before = FindCondition(s_.conditions, kConditionTuningReached);
  const bool changed = before == nullptr || before->status != "False" || before->message != msg;
  SetCond(kConditionTuningReached, false, not_reached ? "NotReached" : "NoOp", msg);
  if (changed) Event(true, not_reached ? "KnobsNotReached" : "KnobsNoOp", msg);
}

// The tuning, steps or containers changed while a rollout was under way. A canary
// judged on the old tuning says nothing about the new one: restart at the first step, or
// (mid-promotion, where the target already holds part of the old tuning) roll back.
bool Machine::SpecChangedInFlight() {
  const std::string hash = RolloutHash(spec());
  if (hash == s_.rollout_hash) return false;
  if (s_.phase == Phase::kPromoting) {
    // rollout_hash keeps the old value: once RolledBack, MaybeRestart sees the change
    // and starts the new rollout.
    StartRollback("SpecChanged",
                  "the tuning changed during promotion; the target gets its baseline back "
                  "and a new rollout follows");
    return true;
  }
  s_.rollout_hash = hash;
  if (s_.phase == Phase::kEnrolling) return false;  // no canary yet: nothing to redo
  if (s_.phase == Phase::kPaused) {
    // Still paused, but back at step 1 with the new canary (if there was one).
    if (s_.current_step > 0) EnterStep(1);
    Event(false, "RolloutRestarted",
          "the tuning or the steps changed while paused; the rollout restarts at step 1");
    return false;
  }
  EnterStep(1);
  To(Phase::kProgressing, "RolloutRestarted",
     absl::StrCat("the tuning or the steps changed; restarting at step 1: ", s_.canary_weight,
                  "% on the canary (", s_.canary_replicas, " of ", s_.total_replicas, ")"));
  return true;
}

bool Machine::ExperimentChanged() {
  const std::string hash = ExperimentHash(spec());
  if (s_.experiment_hash == hash) return false;
  const bool recorded = !s_.experiment_hash.empty();
  s_.experiment_hash = hash;
  // A status written before the hash was recorded, or no step yet: nothing to restart.
  if (!recorded || s_.current_step <= 0) return false;
  const std::string msg = absl::StrCat(
      "analysis.interval, source, mode or baseline changed: both arms take the new settings "
      "and step ",
      s_.current_step, " starts over with a new analysis window");
  EnterStep(s_.current_step);
  if (s_.phase == Phase::kPaused) {
    Event(false, "StepRestarted", msg);
    return false;
  }
  To(Phase::kProgressing, "StepRestarted", msg);
  return true;
}

// The target's replicas differ from what the operator last wrote (the scaled-to
// annotation): a person, an HPA or KEDA scaled it, and the number they wrote is the total
// the app should have — an HPA counts the canary's pods too, since they carry the app's
// labels. Follow and Pause re-split that total at the current weight; Fixed leaves status
// alone, so Converge scales the target back to its share.
void Machine::FollowExternalScale() {
  const int32_t now = target().spec_replicas;
  if (std::optional<int32_t> mine = ScaledTo()) {
    if (now == *mine) {
      FollowHpaAtItsMinimum();
      return;
    }
  } else if (now == s_.stable_replicas || now == s_.total_replicas) {
    // The marker is gone (the Deployment was replaced): a count that is ours or the app's
    // total is nothing new.
    return;
  }
  if (spec().rollout.hpa_policy == HpaPolicy::kFixed) {
    Event(false, "ExternalScaleReverted",
          absl::StrCat("Deployment ", TargetName(), " was scaled to ", now,
                       " by someone else; hpaPolicy Fixed scales it back to ", s_.stable_replicas,
                       " (the rollout's total stays ", s_.total_replicas, ")"));
    return;
  }
  const int32_t before = s_.total_replicas;
  if (now == before) {
    // The total written again after Booster re-split it: an HPA that holds that many on the
    // target itself (pinned at its maxReplicas or minReplicas, it writes its number on every
    // sync while the target has less). The target keeps it; the canary's pods come on top.
    if (!obs_.hpa_name.empty() && s_.target_floor != now && s_.phase != Phase::kPromoting &&
        s_.phase != Phase::kRollingBack) {
      s_.target_floor = now;
      Resplit();
      Event(false, "HPAHoldsTarget",
            absl::StrCat("HorizontalPodAutoscaler ", obs_.hpa_name, " wrote ", now,
                         " on Deployment ", TargetName(),
                         " again: it holds that many there itself, so the target keeps ", now,
                         " and the canary's ", s_.canary_replicas, " come on top"));
    }
    return;
  }
  s_.target_floor = 0;
  s_.total_replicas = now;
  Resplit();
  if (now == 0) {
    Event(false, "ScaledToZero",
          absl::StrCat("Deployment ", TargetName(),
                       " was scaled to 0 by someone else: the rollout holds (nothing to judge) "
                       "until the app has pods again"));
    return;
  }
  if (before == 0 && s_.current_step > 0 && s_.phase != Phase::kPromoting) {
    // Pods again after a hold at 0: the step's window starts over on the new pods.
    EnterStep(s_.current_step);
  }
  Event(false, "ReplicasFollowed",
        absl::StrCat("Deployment ", TargetName(), " was scaled to ", now,
                     " by someone else, the app's total now; the rollout splits it ",
                     s_.stable_replicas, " on the target, ", s_.canary_replicas, " on the canary"));
}

// An HPA that settles at its minReplicas while the target already has that many writes
// nothing (the same count is no change), so FollowExternalScale never sees it: after a
// scale-down through an intermediate count (4, then 3, then 2) the total would stay at the
// intermediate one, and a rollback or deletion would give the target a pod more than the HPA
// wants. Its published wish is taken instead: the total becomes the minimum, which the floor
// keeps on the target, so no pod moves and nothing is written back to the HPA's target.
void Machine::FollowHpaAtItsMinimum() {
  if (obs_.hpa_name.empty() || spec().rollout.hpa_policy == HpaPolicy::kFixed) return;
  // During a step only: the floor that keeps the minimum on the target is a step's.
  if (s_.phase != Phase::kProgressing && s_.phase != Phase::kPaused) return;
  const int32_t min = obs_.hpa_min_replicas, now = target().spec_replicas;
  if (min <= 0 || obs_.hpa_desired_replicas != min || now != min) return;
  if (s_.total_replicas <= min) return;
  const int32_t before = s_.total_replicas;
  s_.target_floor = 0;
  s_.total_replicas = min;
  Resplit();
  Event(false, "ReplicasFollowed",
        absl::StrCat("HorizontalPodAutoscaler ", obs_.hpa_name, " settled at its minReplicas ",
                     min, " (Deployment ", TargetName(), " already has that many): the app's total is ",
                     min, ", not ", before, "; the rollout splits it ", s_.stable_replicas,
                     " on the target, ", s_.canary_replicas, " on the canary"));
}

// Claims an unclaimed profile for this instance before anything else is written; another
// instance's profile is left alone (Run turns the plan into an empty one).
bool Machine::ClaimProfile() {
  if (opts_.instance.empty()) return true;
  const std::string claimer = Annotation(kInstanceAnnotation);
  if (claimer == opts_.instance) return true;
  if (!claimer.empty()) return false;
  if (p_.meta.deleting && !HasFinalizer()) return false;  // going away; nothing to do
  Json patch = Json::array();
  patch.push_back({{"op", "test"}, {"path", "/metadata/uid"}, {"value", p_.meta.uid}});
  if (!p_.meta.resource_version.empty()) {
    patch.push_back({{"op", "test"},
                     {"path", "/metadata/resourceVersion"},
                     {"value", p_.meta.resource_version}});
  }
  if (p_.meta.annotations.empty()) {
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/annotations"},
                     {"value", {{kInstanceAnnotation, opts_.instance}}}});
  } else {
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/annotations/" + PointerKey(kInstanceAnnotation)},
                     {"value", opts_.instance}});
  }
  if (!HasFinalizer() && !p_.meta.deleting) {
    if (p_.meta.finalizers.empty()) {
      patch.push_back({{"op", "add"}, {"path", "/metadata/finalizers"}, {"value", {kFinalizer}}});
    } else {
      patch.push_back({{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", kFinalizer}});
    }
  }
  Action a;
  a.type = ActionType::kClaimProfile;
  a.name = opts_.instance;
  a.body = std::move(patch);
  Push(std::move(a));
  Requeue(kAfterTransition);
  return false;
}

void Machine::Finalize() {
  SetCond(kConditionReady, false, "Finalizing",
          "the profile is being deleted; taking Booster's layer off the target");
  bool done = true;
  if (OwnsCanary()) {
    PushDeleteCanary();
    done = false;
  }
  if (OwnsBaseline()) {
    PushDeleteBaseline();
    done = false;
  }
  // Only a target this profile holds is given back; one held by another profile (or by
  // none: this profile never enrolled it) is left alone.
  const std::string why =
      "unenroll: Booster's layer is taken off the target's current template";
  const DeploymentView& t = target();
  if (HeldByMe(t) && Unenroll(t, why)) done = false;
  const DeploymentView& old = obs_.previous_target;
  if (HeldByMe(old) && Unenroll(old, why)) done = false;
  if (done && HasFinalizer()) {
    Action a;
    a.type = ActionType::kRemoveFinalizer;
    Push(std::move(a));
  } else if (!done) {
    Requeue(kWaitForPods);
  }
}

void Machine::HandleInvalidSpec() {
  const std::string msg(p_.spec.status().message());
  const bool was_invalid = [&] {
    const struct Condition* c = FindCondition(s_.conditions, kConditionInvalidSpec);
    return c != nullptr && c->status == "True" && c->message == msg;
  }();
  SetCond(kConditionInvalidSpec, true, "InvalidSpec", msg);
  if (InFlight(s_.phase)) {
    // Hold: nothing is changed until the spec is fixed, then the rollout continues.
    if (!was_invalid) {
      Event(true, "InvalidSpec",
            absl::StrCat("the rollout holds at ", PhaseName(s_.phase),
                         " until the spec is fixed: ", msg));
    }
    return;
  }
  if (s_.phase != Phase::kFailed || !s_.last_transition ||
      s_.last_transition->reason != "InvalidSpec" || s_.last_transition->message != msg) {
    To(Phase::kFailed, "InvalidSpec", msg, /*warning=*/true);
  }
  if (canary().exists) PushDeleteCanary();
  PushDeleteBaseline();
}

// The namespace may not be tuned: touch nothing. A rollout in flight holds where it is
// (the next pass after the namespace opts in carries on); a profile that had not started
// fails; a finished one keeps its phase. Deleting the profile still restores everything.
void Machine::HandleNamespaceRefused() {
  const std::string& msg = obs_.namespace_refusal;
  const struct Condition* c = FindCondition(s_.conditions, kConditionNamespaceEnabled);
  const bool known = c != nullptr && c->status == "False" && c->message == msg;
  SetCond(kConditionNamespaceEnabled, false, "NotOptedIn", msg);
  if (InFlight(s_.phase) || s_.phase == Phase::kPromoted || s_.phase == Phase::kRolledBack) {
    if (!known) {
      Event(true, "NamespaceNotEnabled",
            absl::StrCat("the profile holds at ", PhaseName(s_.phase), ": ", msg));
    }
    return;
  }
  if (s_.phase != Phase::kFailed || !s_.last_transition ||
      s_.last_transition->reason != "NamespaceNotEnabled" || s_.last_transition->message != msg) {
    To(Phase::kFailed, "NamespaceNotEnabled", msg, /*warning=*/true);
  }
}

// Returns false when the rollout cannot go on because the target is gone.
bool Machine::CheckTarget() {
  const DeploymentView& t = target();
  const bool replaced =
      t.exists && !s_.target_uid.empty() && t.uid != s_.target_uid && InFlight(s_.phase);
  if (t.exists && !replaced) {
    SetCond(kConditionTargetFound, true, "Found",
            absl::StrCat("Deployment ", TargetName(), " found"));
    return true;
  }
  std::string msg = replaced ? absl::StrCat("Deployment ", TargetName(),
                                            " was deleted and re-created during the rollout")
                             : absl::StrCat("Deployment ", TargetName(), " not found in namespace ",
                                            p_.meta.namespace_);
  SetCond(kConditionTargetFound, false, replaced ? "Replaced" : "NotFound", msg);
  if (InFlight(s_.phase)) {
    s_.canary_replicas = 0;
    s_.canary_weight = 0;
    To(Phase::kFailed, "TargetDeleted", msg + "; the canary is deleted", /*warning=*/true);
  } else if (s_.phase == Phase::kPending) {
    Requeue(kWaitForTarget);
  }
  if (canary().exists) PushDeleteCanary();
  PushDeleteBaseline();
  return false;
}

void Machine::MaybeRestart() {
  if (!Terminal(s_.phase)) return;
  const std::string hash = RolloutHash(spec());
  const std::string retry = Annotation(kAnnotationRetry);
  std::string reason, message;
  if (!retry.empty() && retry != s_.handled.retry) {
    s_.handled.retry = retry;
    reason = "Retry";
    message = absl::StrCat("annotation ", kAnnotationRetry, "=", retry, " starts a new rollout");
  } else if (!s_.rollout_hash.empty() && hash != s_.rollout_hash) {
    reason = "SpecChanged";
    message = "the tuning or the steps changed; a new rollout starts";
  } else if (s_.phase == Phase::kFailed && s_.last_transition &&
             ((s_.last_transition->reason == "TargetHeld" && !HeldByOther(target())) ||
              (s_.last_transition->reason == "CanaryNameTaken" && !ForeignCanary()))) {
    reason = "ConflictResolved";
    message = "the object in the way is gone; a new rollout starts";
  } else if (s_.phase == Phase::kFailed && s_.last_transition &&
             s_.last_transition->reason == "NamespaceNotEnabled") {
    reason = "NamespaceEnabled";
    message = "the namespace opted in; a new rollout starts";
  } else if (s_.phase == Phase::kFailed && s_.last_transition &&
             (s_.last_transition->reason == "InvalidSpec" ||
              (s_.last_transition->reason == "TargetDeleted" && target().exists) ||
              (s_.last_transition->reason == "TemplateMismatch" &&
               (hash != s_.rollout_hash ||
                (target().exists && TemplateHash(team_) != s_.team_template_hash))))) {
    reason = s_.last_transition->reason == "InvalidSpec" ? "SpecFixed" : "TargetFound";
    message = "the problem that stopped the rollout is gone; a new rollout starts";
  } else {
    return;
  }
  s_.current_step = 0;
  s_.canary_weight = 0;
  s_.canary_replicas = 0;
  s_.baseline_replicas = 0;
  s_.extensions = 0;
  s_.step_start_time = absl::InfinitePast();
  s_.analysis_start_time = absl::InfinitePast();
  s_.rollout_hash.clear();
  To(Phase::kPending, std::move(reason), std::move(message));
}

void Machine::StartRollout(std::string reason, std::string message, bool keep_tuning) {
  const DeploymentView& t = target();
  s_.target_uid = t.uid;
  s_.target_name = t.name;
  s_.rollout_hash = RolloutHash(spec());
  s_.canary_name = t.name + "-booster";
  s_.original_replicas = t.spec_replicas;
  s_.total_replicas = t.spec_replicas;
  s_.stable_replicas = t.spec_replicas;
  s_.canary_replicas = 0;
  s_.baseline_replicas = 0;
  s_.canary_weight = 0;
  s_.current_step = 0;
  s_.extensions = 0;
  s_.target_floor = 0;
  s_.team_template_hash = TemplateHash(team_);
  // A target an earlier rollout of this profile promoted keeps that tuning as its baseline
  // arm: the new canary is compared with what runs now, and a rollback keeps it.
  s_.baseline_tuning.clear();
  baseline_.reset();
  restored_.reset();
  const std::string profile_ref = p_.meta.namespace_ + "/" + p_.meta.name;
  if (keep_tuning && TemplateArm(t.pod_template) == kArmPromoted &&
      t.pod_template.contains("metadata") &&
      t.pod_template["metadata"].value("annotations", Json::object()).value(kProfileAnnotation,
                                                                              "") == profile_ref) {
    if (std::optional<Json> tuning = TemplateTuning(t.pod_template)) {
      s_.baseline_tuning = tuning->dump();
      baseline_.reset();
      restored_.reset();
    }
  }
  s_.analysis_start_time = absl::InfinitePast();
  s_.step_start_time = now_;
  SetCond(kConditionTargetModified, false, "Unchanged", "");
  SetCond(kConditionTuningRejected, false, "Admitted", "");
  SetCondition(s_.conditions, kConditionTuningReached, "Unknown", "NoReport",
               "no canary agent has reported yet", gen(), now_);
  s_.conditions.erase(std::remove_if(s_.conditions.begin(), s_.conditions.end(),
                                     [](const Condition& c) {
                                       return c.type == kConditionLayerIntact;
                                     }),
                      s_.conditions.end());
  To(Phase::kEnrolling, std::move(reason), std::move(message));
}

void Machine::Pending() {
  if (!HasFinalizer()) {
    Requeue(kAfterTransition);  // the AddFinalizer action must land before anything else
    return;
  }
  const DeploymentView& t = target();
  StartRollout("Enrolling",
               absl::StrCat("enrolling Deployment ", t.name,
                            ": agent sidecar in observe mode and the dormant runtime library"),
               /*keep_tuning=*/true);
}

void Machine::Enrolling() {
  const DeploymentView& t = target();
  SpecChangedInFlight();
  const std::string abort = Annotation(kAnnotationAbort);
  if (!abort.empty() && abort != s_.handled.abort) {
    s_.handled.abort = abort;
    StartRollback("Aborted",
                  "aborted by annotation during enrollment; Booster's layer is taken off the "
                  "target");
    return;
  }
  NewRevision();
  const absl::StatusOr<Json>& baseline = BaselineTemplate();
  if (!baseline.ok()) {
    To(Phase::kFailed, "TemplateMismatch", std::string(baseline.status().message()), true);
    return;
  }
  if (AnnotationOf(t, kHolderUidAnnotation) == p_.meta.uid && LayerIs(*baseline) &&
      Settled(t, t.spec_replicas, "")) {
    s_.total_replicas = t.spec_replicas;
    s_.stable_replicas = t.spec_replicas;
    std::string why;
    if (EffectivelyPaused(&why)) {
      s_.current_step = 0;
      To(Phase::kPaused, "Paused", absl::StrCat("enrolled; paused before the first step: ", why));
      return;
    }
    EnterStep(1);
    To(Phase::kProgressing, "StepStarted",
       absl::StrCat("enrolled; step 1 of ", spec().rollout.steps.size(), ": ", s_.canary_weight,
                    "% on the canary (", s_.canary_replicas, " of ", s_.total_replicas, ")"));
    return;
  }
  if (now_ - s_.phase_start_time > spec().rollout.progress_deadline) {
    StartRollback(
        "ProgressDeadlineExceeded",
        absl::StrCat("the enrolled pods of Deployment ", t.name, " were not ready within ",
                     FormatGoDuration(spec().rollout.progress_deadline),
                     "; Booster's layer is taken off the target"));
    return;
  }
  Requeue(kWaitForPods);
}

void Machine::Progressing() {
  FollowExternalScale();  // first: a restart below splits the app's current total
  if (NewRevision() || SpecChangedInFlight() || ExperimentChanged()) return;
  Resplit();  // an HPA's minReplicas may have moved
  const std::string abort = Annotation(kAnnotationAbort);
  if (!abort.empty() && abort != s_.handled.abort) {
    s_.handled.abort = abort;
    StartRollback("Aborted", absl::StrCat("aborted by annotation at step ", s_.current_step));
    return;
  }
  const std::string promote = Annotation(kAnnotationPromoteNow);
  if (!promote.empty() && promote != s_.handled.promote_now) {
    s_.handled.promote_now = promote;
    s_.step_start_time = now_;
    To(Phase::kPromoting, "PromotedByHand",
       absl::StrCat("promote-now at step ", s_.current_step,
                    ": the remaining steps and the "
                    "analysis are skipped"));
    return;
  }
  std::string why;
  if (EffectivelyPaused(&why)) {
    To(Phase::kPaused, "Paused", absl::StrCat("paused at step ", s_.current_step, ": ", why));
    return;
  }
  const absl::StatusOr<Json>& canary_tmpl = CanaryTemplate();
  const absl::StatusOr<Json>& baseline = BaselineTemplate();
  if (!canary_tmpl.ok() || !baseline.ok()) {
    StartRollback("TemplateMismatch",
                  std::string((canary_tmpl.ok() ? baseline : canary_tmpl).status().message()));
    return;
  }
  if (CanaryRejected() || CanaryNearMemoryLimit(*canary_tmpl)) return;
  ReportReach(*canary_tmpl, *baseline);
  if (s_.total_replicas == 0) {
    // Scaled to 0 by someone else: nothing runs, nothing to judge, no deadline.
    s_.analysis_start_time = absl::InfinitePast();
    Requeue(kWaitForTarget);
    return;
  }
  // With a fresh baseline the step is judged on it: its pods must be up too (and a
  // baseline this step does not want must be gone).
  const absl::StatusOr<Json>& fresh_tmpl = FreshTemplate();
  const bool fresh_ready =
      s_.baseline_replicas > 0
          ? fresh_tmpl.ok() && Settled(fresh(), s_.baseline_replicas, TemplateMarker(*fresh_tmpl))
          : !OwnsBaseline();
  const bool ready = Settled(canary(), s_.canary_replicas, TemplateMarker(*canary_tmpl)) &&
                     Settled(target(), s_.stable_replicas, "") && TargetMeasuresAs(*baseline) &&
                     fresh_ready;
  if (!ready) {
    // Pods that were ready and are not (a pod restarted, the app scaled): the deadline
    // counts from then. In mode Metrics the step's analysis goes on where it was (its
    // windows and the looks it spent stay; no verdict is asked meanwhile); mode Time's
    // step needs stepDuration of both arms ready in one piece and starts its clock again.
    if (s_.analysis_start_time != absl::InfinitePast() &&
        s_.not_ready_since == absl::InfinitePast()) {
      s_.not_ready_since = now_;
    }
    const absl::Time since =
        s_.not_ready_since != absl::InfinitePast() ? s_.not_ready_since : s_.step_start_time;
    if (now_ - since > spec().rollout.progress_deadline) {
      StartRollback(
          "ProgressDeadlineExceeded",
          absl::StrCat("step ", s_.current_step, ": the pods were not ready within ",
                       FormatGoDuration(spec().rollout.progress_deadline), " (canary ",
                       canary().available_replicas, "/", s_.canary_replicas, " available, target ",
                       target().available_replicas, "/", s_.stable_replicas,
                       s_.baseline_replicas > 0
                           ? absl::StrCat(", fresh baseline ", fresh().available_replicas, "/",
                                          s_.baseline_replicas)
                           : "",
                       ")"));
      return;
    }
    if (spec().rollout.analysis.mode != AnalysisMode::kMetrics) {
      s_.analysis_start_time = absl::InfinitePast();
    }
    Requeue(kWaitForPods);
    return;
  }
  s_.not_ready_since = absl::InfinitePast();
  if (s_.analysis_start_time == absl::InfinitePast()) s_.analysis_start_time = now_;
  if (obs_.arms) {
    s_.arms = obs_.arms->step == s_.current_step ? *obs_.arms : ArmsReport{.step = s_.current_step};
  }
  VerdictRequest req;
  req.profile_namespace = p_.meta.namespace_;
  req.profile_name = p_.meta.name;
  req.step = s_.current_step;
  req.steps = static_cast<int>(spec().rollout.steps.size());
  req.weight = s_.canary_weight;
  req.baseline_replicas = s_.baseline_replicas;
  req.analysis_start = s_.analysis_start_time;
  req.extensions = s_.extensions;
  req.step_duration = spec().rollout.step_duration;
  req.analysis = &spec().rollout.analysis;
  req.now = now_;
  Verdict v = verdicts_.Judge(req);
  auto record = [&](absl::string_view verdict) {
    s_.last_decision =
        Decision{std::string(verdict), s_.current_step, v.reason, v.message, now_, v.evidence};
  };
  const int steps = static_cast<int>(spec().rollout.steps.size());
  auto advance = [&](std::string reason, std::string message, bool warning = false) {
    if (s_.current_step >= steps) {
      s_.step_start_time = now_;
      To(Phase::kPromoting, std::move(reason),
         absl::StrCat(message, "; promoting the tuning into Deployment ", TargetName()), warning);
      return;
    }
    EnterStep(s_.current_step + 1);
    To(Phase::kProgressing, std::move(reason),
       absl::StrCat(message, "; step ", s_.current_step, " of ", steps, ": ", s_.canary_weight,
                    "% on the canary (", s_.canary_replicas, " of ", s_.total_replicas, ")"),
       warning);
  };
  // analysis.dryRun: a verdict that would roll back is recorded, marked and announced, but
  // the step runs on to its end (extensions included) and then advances as a Pass would.
  // Before the end it is recorded once per verdict and step, so the looks that follow (the
  // judge is still asked) do not announce it again.
  const absl::Time step_end =
      s_.analysis_start_time + spec().rollout.step_duration * (1 + s_.extensions);
  auto spared = [&](absl::string_view verdict, std::string reason, const std::string& what) {
    const std::string message = absl::StrCat(kDryRunPrefix, what);
    const bool mid_step = now_ < step_end;
    const bool fresh = !mid_step || !DryRunRecorded(verdict);
    if (fresh) {
      record(verdict);
      s_.last_decision->dry_run = true;
      s_.last_decision->message = absl::StrCat(kDryRunPrefix, v.message);
    }
    if (!mid_step) {
      advance(std::move(reason), message, /*warning=*/true);
      return;
    }
    if (fresh) {
      Event(true, std::move(reason),
            absl::StrCat(message, "; the step runs on for ",
                         FormatGoDuration(absl::Ceil(step_end - now_, absl::Seconds(1)))));
    }
    Requeue(std::min(step_end - now_, spec().rollout.analysis.interval));
  };
  const bool dry_run = spec().rollout.analysis.dry_run;
  switch (v.kind) {
    case VerdictKind::kWait:
      Requeue(v.recheck_after);
      // status.arms follows the windows as they arrive, once per window length.
      if (obs_.arms) Requeue(spec().rollout.analysis.interval);
      return;
    case VerdictKind::kPass: {
      // A would-be rollback earlier in this step stays in the transition's message.
      const std::string earlier =
          DryRunRecorded("") ? absl::StrCat("; earlier in the step, ", s_.last_decision->message)
                             : "";
      record("Pass");
      advance("StepPassed",
              absl::StrCat("step ", s_.current_step, " passed: ", v.message, earlier));
      return;
    }
    case VerdictKind::kFail:
      if (dry_run) {
        spared("Fail", "DryRunAnalysisFailed",
               absl::StrCat("step ", s_.current_step, " failed: ", v.message));
        return;
      }
      record("Fail");
      StartRollback("AnalysisFailed",
                    absl::StrCat("step ", s_.current_step, " failed: ", v.message));
      return;
    case VerdictKind::kInconclusive:
      if (s_.extensions < spec().rollout.analysis.max_extensions) {
        record("Inconclusive");
        ++s_.extensions;
        Event(false, "StepExtended",
              absl::StrCat("step ", s_.current_step, " inconclusive (", v.message,
                           "); extended by ", FormatGoDuration(spec().rollout.step_duration), " (",
                           s_.extensions, " of ", spec().rollout.analysis.max_extensions, ")"));
        Requeue(spec().rollout.step_duration);
        return;
      }
      if (spec().rollout.analysis.on_inconclusive == InconclusivePolicy::kPromote) {
        record("Inconclusive");
        advance("InconclusiveAccepted",
                absl::StrCat("step ", s_.current_step, " still inconclusive after ", s_.extensions,
                             " extensions; onInconclusive is Promote"));
      } else if (dry_run) {
        spared("Inconclusive", "DryRunAnalysisInconclusive",
               absl::StrCat("step ", s_.current_step, " still inconclusive after ", s_.extensions,
                            " extensions: ", v.message));
      } else {
        record("Inconclusive");
        StartRollback("AnalysisInconclusive",
                      absl::StrCat("step ", s_.current_step, " still inconclusive after ",
                                   s_.extensions, " extensions: ", v.message));
      }
      return;
  }
}

bool Machine::DryRunRecorded(absl::string_view verdict) const {
  const std::optional<Decision>& d = s_.last_decision;
  return d && d->dry_run && d->step == s_.current_step && d->time >= s_.step_start_time &&
         (verdict.empty() || d->verdict == verdict);
}

void Machine::Paused() {
  FollowExternalScale();  // first: a restart below splits the app's current total
  if (NewRevision() || SpecChangedInFlight() || ExperimentChanged()) return;
  Resplit();
  const std::string abort = Annotation(kAnnotationAbort);
  if (!abort.empty() && abort != s_.handled.abort) {
    s_.handled.abort = abort;
    StartRollback("Aborted",
                  absl::StrCat("aborted by annotation while paused at step ", s_.current_step));
    return;
  }
  const std::string promote = Annotation(kAnnotationPromoteNow);
  if (!promote.empty() && promote != s_.handled.promote_now) {
    s_.handled.promote_now = promote;
    s_.step_start_time = now_;
    To(Phase::kPromoting, "PromotedByHand",
       absl::StrCat("promote-now while paused at step ", s_.current_step));
    return;
  }
  std::string why;
  if (EffectivelyPaused(&why)) return;
  // Resuming a judged step of an unchanged experiment goes on with it: the arms served
  // throughout the pause, so their windows (pause included) and the looks already spent
  // stay, and the next look sees all of them. Mode Time, or a pause before the first
  // step, starts the step (its soak) from now.
  const bool keeps_step = s_.current_step >= 1 &&
                          spec().rollout.analysis.mode == AnalysisMode::kMetrics &&
                          s_.experiment_hash == ExperimentHash(spec());
  if (keeps_step) {
    Resplit();
  } else {
    EnterStep(std::max(1, s_.current_step));
  }
  To(Phase::kProgressing, "Resumed",
     absl::StrCat("resumed at step ", s_.current_step, ": ", s_.canary_weight, "% on the canary (",
                  s_.canary_replicas, " of ", s_.total_replicas, ")",
                  keeps_step ? "; the step's analysis goes on with the windows of the pause"
                             : ""));
}

void Machine::Promoting() {
  FollowExternalScale();  // first: a restart below splits the app's current total
  if (NewRevision() || SpecChangedInFlight()) return;
  const std::string abort = Annotation(kAnnotationAbort);
  if (!abort.empty() && abort != s_.handled.abort) {
    s_.handled.abort = abort;
    StartRollback("Aborted",
                  "aborted by annotation during promotion; the target gets its baseline back");
    return;
  }
  const absl::StatusOr<Json>& promoted = PromotedTemplate();
  if (!promoted.ok()) {
    StartRollback("TemplateMismatch", absl::StrCat("cannot build the promoted template: ",
                                                   promoted.status().message()));
    return;
  }
  const std::string marker = TemplateMarker(*promoted);
  const int32_t n = s_.total_replicas;
  const int32_t h = s_.stable_replicas;
  const bool canary_settled = s_.canary_replicas == 0
                                  ? (!OwnsCanary() || canary().spec_replicas == 0)
                                  : OwnsCanary() && canary().spec_replicas == s_.canary_replicas;
  if (Settled(target(), h, marker) && canary_settled) {
    if (h >= n) {
      s_.current_step = static_cast<int>(spec().rollout.steps.size());
      s_.canary_weight = 0;
      s_.canary_replicas = 0;
      s_.stable_replicas = n;
      SetCond(kConditionLayerIntact, true, "Intact",
              "the target carries the promoted tuning, every part of it");
      To(Phase::kPromoted, "Promoted",
         absl::StrCat("Deployment ", TargetName(), " runs the tuning on all ", n,
                      " replicas; the canary is deleted"));
      return;
    }
    s_.stable_replicas = std::min(n, h + PromotionBatch(n));
    s_.canary_replicas = n - s_.stable_replicas;
    s_.step_start_time = now_;
    Requeue(kWaitForPods);
    return;
  }
  if (now_ - s_.step_start_time > spec().rollout.progress_deadline) {
    StartRollback(
        "ProgressDeadlineExceeded",
        absl::StrCat("the promoted pods of Deployment ", TargetName(), " were not ready within ",
                     FormatGoDuration(spec().rollout.progress_deadline),
                     "; the target gets its baseline back"));
    return;
  }
  Requeue(kWaitForPods);
}

// After promotion the Deployment is the team's again (replicas, revisions); Booster keeps
// its layer on it and watches that it stays there.
void Machine::Promoted() {
  const std::string hash = TemplateHash(team_);
  if (!s_.team_template_hash.empty() && hash != s_.team_template_hash) {
    s_.team_template_hash = hash;
    if (spec().rollout.on_new_revision == NewRevisionPolicy::kReverify) {
      StartRollout("NewRevision",
                   absl::StrCat("Deployment ", TargetName(),
                                " got a new revision from someone else; onNewRevision is "
                                "Reverify: the tuning goes out as a canary again, from a "
                                "baseline without it"),
                   /*keep_tuning=*/false);
      return;
    }
    Event(false, "NewRevision",
          absl::StrCat("Deployment ", TargetName(),
                       " got a new revision from someone else; the promoted tuning stays on it"));
  }
  const absl::StatusOr<Json>& promoted = PromotedTemplate();
  if (!promoted.ok()) return;
  const std::vector<std::string> missing =
      LayerDifferences(target().pod_template, *promoted, opts_);
  if (missing.empty()) {
    SetCond(kConditionLayerIntact, true, "Intact",
            "the target carries the promoted tuning, every part of it");
    return;
  }
  const std::string msg = absl::StrCat(
      "someone else's change took part of the promoted tuning off Deployment ", TargetName(),
      ": ", absl::StrJoin(missing, "; "),
      ". Booster does not put it back untested: annotate the profile booster.dev/retry to send "
      "it out as a canary again");
  const Condition* before = FindCondition(s_.conditions, kConditionLayerIntact);
  const bool changed = before == nullptr || before->status != "False" || before->message != msg;
  SetCond(kConditionLayerIntact, false, "RemovedByOthers", msg);
  if (changed) Event(true, "LayerRemoved", msg);
}

void Machine::RollingBack() {
  FollowExternalScale();  // the target gets the app's whole current total
  const DeploymentView& t = target();
  const absl::StatusOr<Json>& restored = RestoredTemplate();
  const bool template_done =
      BaselineTuning() ? (!restored.ok() || LayerIs(*restored))
                       : !HasLayer(t.pod_template) && !HasAnyOf(t);
  if (!OwnsCanary() && template_done && Settled(t, s_.total_replicas, "")) {
    s_.team_template_hash = TemplateHash(team_);
    const std::string why = s_.last_transition ? s_.last_transition->message : "";
    To(Phase::kRolledBack, "RolledBack",
       absl::StrCat("Deployment ", t.name, " is back to ", s_.total_replicas,
                    " replicas without the tuning", why.empty() ? "" : " (", why,
                    why.empty() ? "" : ")"),
       /*warning=*/true);
    return;
  }
  if (now_ - s_.phase_start_time > spec().rollout.progress_deadline) {
    const std::string msg = absl::StrCat("the rollback has not settled within ",
                                         FormatGoDuration(spec().rollout.progress_deadline),
                                         "; check the target's pods");
    const Condition* prog = FindCondition(s_.conditions, kConditionProgressing);
    // Announced once, when it first stalls (the condition stays while it does).
    if (prog == nullptr || prog->reason != "RollbackStalled") Event(true, "RollbackStalled", msg);
    SetCond(kConditionProgressing, false, "RollbackStalled", msg);
  }
  Requeue(kWaitForPods);
}

void Machine::PushScaleTarget(int32_t n) {
  Push(TargetAction(target(), TargetWrite{.replicas = n}));
}

// Creates the canary, or patches ours (after a test of its uid). A Deployment of that name
// that is not ours is never written.
Action ArmWrite(const DeploymentView& d, std::string name, Json manifest, ActionType create,
                ActionType patch, const Json& tmpl, int32_t n) {
  Action a;
  a.name = std::move(name);
  a.replicas = n;
  if (!d.exists) {
    a.type = create;
    a.body = std::move(manifest);
    a.body["metadata"]["name"] = a.name;
    return a;
  }
  a.type = patch;
  a.name = d.name;
  a.uid = d.uid;
  a.body = Json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", d.uid}},
                        {{"op", "add"}, {"path", "/spec/replicas"}, {"value", n}},
                        {{"op", "replace"}, {"path", "/spec/template"}, {"value", tmpl}}});
  return a;
}

void Machine::PushCanary(const Json& tmpl, int32_t n) {
  if (ForeignCanary()) return;
  Push(ArmWrite(canary(), s_.canary_name,
                canary().exists ? Json() : CanaryDeployment(p_.meta, target(), tmpl, n),
                ActionType::kCreateCanary, ActionType::kPatchCanary, tmpl, n));
}

void Machine::PushBaseline(const Json& tmpl, int32_t n) {
  if (ForeignBaseline()) return;
  Push(ArmWrite(fresh(), FreshName(),
                fresh().exists ? Json() : BaselineDeployment(p_.meta, target(), tmpl, n),
                ActionType::kCreateBaseline, ActionType::kPatchBaseline, tmpl, n));
}

// Deletes Deployment `d` (ours: the caller checked) on the precondition of its uid.
void Machine::PushDelete(const DeploymentView& d, ActionType type) {
  Action a;
  a.type = type;
  a.name = d.name;
  a.uid = d.uid;
  Push(std::move(a));
}

// Actions that make the cluster match s_. Lowering actions first: a pod is never
// requested on one side before it is released on the other.
void Machine::Converge() {
  const DeploymentView& t = target();
  const DeploymentView& c = canary();
  std::vector<Action> lower, raise;
  auto put = [&](Action a) {
    (a.replicas >= 0 && a.replicas < t.spec_replicas ? lower : raise).push_back(std::move(a));
  };
  // The target gets `tmpl` (unless its layer is that already) and `n` replicas.
  auto write_target = [&](const Json* tmpl, int32_t n, ActionType type, bool stepping = false) {
    TargetWrite w{.type = type};
    if (tmpl != nullptr && !(stepping ? TargetMeasuresAs(*tmpl) : LayerIs(*tmpl))) w.tmpl = tmpl;
    // The holder annotations were lost (the Deployment was replaced): claimed again.
    w.claim = AnnotationOf(t, kHolderUidAnnotation) != p_.meta.uid;
    if (t.spec_replicas != n || ScaledTo() != n) w.replicas = n;
    if (w.tmpl == nullptr && w.replicas < 0 && !w.claim) return;
    if (w.tmpl == nullptr) w.type = ActionType::kScaleTarget;
    put(TargetAction(t, w));
  };
  // The canary or the fresh baseline (`d`) gets `tmpl` and `n` replicas unless it has them.
  auto apply_arm = [&](const DeploymentView& d, bool foreign, const Json& tmpl, int32_t n) {
    if (foreign) return;  // never ours to write
    if (d.exists && d.spec_replicas == n &&
        TemplateMarker(d.pod_template) == TemplateMarker(tmpl)) {
      return;
    }
    size_t before = actions_.size();
    if (&d == &c) {
      PushCanary(tmpl, n);
    } else {
      PushBaseline(tmpl, n);
    }
    Action a = std::move(actions_.back());
    actions_.resize(before);
    (d.exists && n < d.spec_replicas ? lower : raise).push_back(std::move(a));
  };
  auto apply_canary = [&](const Json& tmpl, int32_t n) { apply_arm(c, ForeignCanary(), tmpl, n); };
  const DeploymentView& b = fresh();
  auto apply_baseline = [&](const Json& tmpl, int32_t n) {
    apply_arm(b, ForeignBaseline(), tmpl, n);
  };
  switch (s_.phase) {
    case Phase::kPending:
      break;
    case Phase::kEnrolling: {
      const absl::StatusOr<Json>& baseline = BaselineTemplate();
      if (!baseline.ok()) break;
      const bool layer = LayerIs(*baseline);
      if (layer && HeldByMe(t) && ScaledTo() == t.spec_replicas && !HasLegacyAnnotations(t) &&
          AnnotationOf(t, kHolderUidAnnotation) == p_.meta.uid) {
        break;
      }
      // Claims the target and takes it over at the replicas it has; the template only if
      // its layer is not the baseline's already (a target promoted earlier keeps its pods).
      TargetWrite w{.type = ActionType::kEnrollTarget,
                    .claim = true,
                    .mark = true,
                    .remove_legacy = true};
      if (!layer) w.tmpl = &*baseline;
      Push(TargetAction(t, w));
      break;
    }
    case Phase::kProgressing:
    case Phase::kPaused: {
      const absl::StatusOr<Json>& baseline = BaselineTemplate();
      const absl::StatusOr<Json>& tmpl = CanaryTemplate();
      if (!baseline.ok() || !tmpl.ok()) break;
      if (s_.current_step == 0) {
        PushDeleteCanary();
        PushDeleteBaseline();
        write_target(&*baseline, s_.stable_replicas, ActionType::kEnrollTarget, true);
        break;
      }
      const absl::StatusOr<Json>& fresh_tmpl = FreshTemplate();
      const bool want_fresh = s_.baseline_replicas > 0 && fresh_tmpl.ok();
      if (!c.exists || (want_fresh && !b.exists)) {
        // Created empty first: if the name is taken meanwhile the create fails and the
        // target has not given up a replica for a canary (or baseline) that cannot be.
        if (!c.exists) apply_canary(*tmpl, 0);
        if (want_fresh && !b.exists) apply_baseline(*fresh_tmpl, 0);
        break;
      }
      if (!want_fresh) PushDeleteBaseline();  // this step compares with the target
      write_target(&*baseline, s_.stable_replicas, ActionType::kEnrollTarget, true);
      apply_canary(*tmpl, s_.canary_replicas);
      if (want_fresh) apply_baseline(*fresh_tmpl, s_.baseline_replicas);
      break;
    }
    case Phase::kPromoting: {
      PushDeleteBaseline();  // before the target takes its pods back
      const absl::StatusOr<Json>& promoted = PromotedTemplate();
      if (!promoted.ok()) break;
      if (TemplateMarker(t.pod_template) != TemplateMarker(*promoted)) {
        TargetWrite w{.type = ActionType::kPromoteTemplate, .tmpl = &*promoted};
        w.replicas = s_.stable_replicas;
        put(TargetAction(t, w));
      } else if (t.spec_replicas != s_.stable_replicas || ScaledTo() != s_.stable_replicas) {
        PushScaleTarget(s_.stable_replicas);
        put(std::move(actions_.back()));
        actions_.pop_back();
      }
      if (OwnsCanary() && c.spec_replicas != s_.canary_replicas) {
        // Only the count changes: the canary keeps the template it was judged with.
        Json tmpl = c.pod_template;
        apply_canary(tmpl, s_.canary_replicas);
      } else if (!c.exists && s_.canary_replicas > 0) {
        const absl::StatusOr<Json>& tmpl = CanaryTemplate();
        if (tmpl.ok()) apply_canary(*tmpl, 0);  // empty first, as in Progressing
      }
      break;
    }
    case Phase::kRollingBack: {
      PushDeleteCanary();
      PushDeleteBaseline();
      const absl::StatusOr<Json>& restored = RestoredTemplate();
      if (!restored.ok()) break;
      if (!BaselineTuning()) {
        // Unenroll: the layer taken off the current template (byte for byte the team's,
        // so the Deployment controller reuses its ReplicaSet when nobody edited it), N
        // replicas, and none of Booster's annotations left on the Deployment.
        const bool layered = HasLayer(t.pod_template);
        const bool resize = t.spec_replicas != s_.total_replicas;
        if (!layered && !resize && !HasAnyOf(t)) break;
        TargetWrite w{.type = layered ? ActionType::kRestoreTemplate : ActionType::kScaleTarget,
                      .remove_annotations = true};
        if (layered) w.tmpl = &*restored;
        if (resize) {
          w.replicas = s_.total_replicas;
          w.raw = true;
        }
        Action a = TargetAction(t, w);
        a.replicas = s_.total_replicas;
        put(std::move(a));
        break;
      }
      write_target(&*restored, s_.total_replicas, ActionType::kRestoreTemplate);
      break;
    }
    case Phase::kPromoted:
    case Phase::kRolledBack:
    case Phase::kFailed:
      PushDeleteCanary();
      PushDeleteBaseline();
      break;
  }
  for (Action& a : lower) Push(std::move(a));
  for (Action& a : raise) Push(std::move(a));
}

void Machine::FinishConditions() {
  const Phase ph = s_.phase;
  if (ph == Phase::kPromoted) {
    const Condition* layer = FindCondition(s_.conditions, kConditionLayerIntact);
    if (layer != nullptr && layer->status == "False") {
      SetCond(kConditionReady, false, "LayerRemoved", layer->message);
    } else {
      SetCond(kConditionReady, true, "Promoted", "the tuning is promoted into the target");
    }
  } else if (!p_.meta.deleting) {
    std::string msg = s_.last_transition ? s_.last_transition->message : "";
    SetCond(kConditionReady, false, std::string(PhaseName(ph)), msg);
  }
  const Condition* prog = FindCondition(s_.conditions, kConditionProgressing);
  const bool stalled = prog != nullptr && prog->reason == "RollbackStalled" &&
                       ph == Phase::kRollingBack && !transitioned_;
  if (!stalled) {
    const bool moving = ph == Phase::kEnrolling || ph == Phase::kProgressing ||
                        ph == Phase::kPromoting || ph == Phase::kRollingBack;
    std::string msg =
        ph == Phase::kProgressing
            ? (s_.total_replicas == 0
                   ? absl::StrCat("step ", s_.current_step,
                                  ": held, the app has 0 replicas (nothing to judge)")
                   : absl::StrCat("step ", s_.current_step, ": ", s_.canary_weight,
                                  "% on the canary"))
            : std::string(PhaseName(ph));
    SetCond(kConditionProgressing, moving, std::string(PhaseName(ph)), msg);
  }
  if (obs_.hpa_name.empty()) {
    if (FindCondition(s_.conditions, kConditionHpaDetected) != nullptr) {
      SetCond(kConditionHpaDetected, false, "NoHPA", "");
    }
  } else {
    std::string policy = p_.spec.ok() ? (spec().rollout.hpa_policy == HpaPolicy::kFollow  ? "Follow"
                                         : spec().rollout.hpa_policy == HpaPolicy::kPause ? "Pause"
                                                                                          : "Fixed")
                                      : "unknown";
    SetCond(kConditionHpaDetected, true, "HPATargetsDeployment",
            absl::StrCat("HorizontalPodAutoscaler ", obs_.hpa_name,
                         " scales the target (minReplicas ", obs_.hpa_min_replicas,
                         "); hpaPolicy ", policy, " applies"));
  }
}

Plan Machine::Run() {
  if (!ClaimProfile()) {
    Plan plan;
    plan.status = p_.status;
    const std::string claimer = Annotation(kInstanceAnnotation);
    if (!claimer.empty() && claimer != opts_.instance) {
      plan.claimed_by = claimer;  // another instance's: nothing is written, nothing done
      return plan;
    }
    plan.actions = std::move(actions_);
    AppendRequeue(plan);
    return plan;
  }
  if (p_.meta.deleting) {
    Finalize();
  } else {
    if (!HasFinalizer()) {
      Action a;
      a.type = ActionType::kAddFinalizer;
      Push(std::move(a));
    }
    if (!obs_.namespace_refusal.empty()) {
      HandleNamespaceRefused();
    } else if (!p_.spec.ok()) {
      SetCond(kConditionNamespaceEnabled, true, "OptedIn", "");
      HandleInvalidSpec();
    } else {
      SetCond(kConditionNamespaceEnabled, true, "OptedIn", "");
      SetCond(kConditionInvalidSpec, false, "Valid", "");
      s_.analysis_template = obs_.analysis_template;
      const bool releasing = ReleasePreviousTarget();
      if (!releasing) MaybeRestart();
      if (!releasing && !transitioned_ && CheckTarget()) {
        if (!CheckOwnership() && !transitioned_) {
          switch (s_.phase) {
          case Phase::kPending:
            Pending();
            break;
          case Phase::kEnrolling:
            Enrolling();
            break;
          case Phase::kProgressing:
            Progressing();
            break;
          case Phase::kPaused:
            Paused();
            break;
          case Phase::kPromoting:
            Promoting();
            break;
          case Phase::kRollingBack:
            RollingBack();
            break;
          case Phase::kPromoted:
            Promoted();
            break;
          case Phase::kRolledBack:
          case Phase::kFailed:
            break;
          }
        }
        // A target held by another profile is never written; a canary that is not ours is
        // never written either (PushCanary and PushDeleteCanary check it).
        if (target().exists && !HeldByOther(target()) &&
            (s_.target_uid.empty() || target().uid == s_.target_uid)) {
          Converge();
        }
      }
    }
    FinishConditions();
  }
  s_.observed_generation = gen();
  Plan plan;
  plan.status_changed = !(s_ == p_.status);
  plan.status = std::move(s_);
  plan.actions = std::move(actions_);
  for (Action& e : events_) plan.actions.push_back(std::move(e));
  AppendRequeue(plan);
  return plan;
}

void Machine::AppendRequeue(Plan& plan) const {
  if (requeue_ == absl::InfiniteDuration()) return;
  Action a;
  a.type = ActionType::kRequeueAfter;
  a.delay = requeue_;
  plan.actions.push_back(std::move(a));
}

}  // namespace

namespace {

// "container app was OOM-killed: ..." for the first container of `pod` whose
// current or last state is a termination by the kernel's OOM killer; "" when none.
std::string OomKilled(const Json& pod) {
  Json::json_pointer cp("/status/containerStatuses");
  if (!pod.contains(cp) || !pod.at(cp).is_array()) return "";
  for (const Json& c : pod.at(cp)) {
    for (const char* reason : {"/state/terminated/reason", "/lastState/terminated/reason"}) {
      if (StringAt(c, reason) != "OOMKilled") continue;
      return absl::StrCat("container ", StringAt(c, "/name"),
                          " was OOM-killed: it reached its memory limit");
    }
  }
  return "";
}

}  // namespace

std::optional<RejectedPod> ObserveRejectedPod(const Json& pod) {
  if (!pod.is_object()) return std::nullopt;
  RejectedPod r;
  if (StringAt(pod, "/status/phase") == "Failed" &&
      StringAt(pod, "/status/reason") == "SysctlForbidden") {
    r.reason = "SysctlForbidden";
    r.message = StringAt(pod, "/status/message");
  } else if (std::string oom = OomKilled(pod);
             !oom.empty() && StringAt(pod, "/metadata/deletionTimestamp").empty()) {
    // A pod on its way out (an earlier canary's) says nothing of the current one.
    r.reason = "OOMKilled";
    r.message = std::move(oom);
  } else {
    return std::nullopt;
  }
  r.name = StringAt(pod, "/metadata/name");
  Json::json_pointer lp("/metadata/labels");
  if (pod.contains(lp) && pod.at(lp).is_object()) {
    auto arm = pod.at(lp).find(kArmLabel);
    if (arm != pod.at(lp).end() && arm->is_string()) r.arm = arm->get<std::string>();
  }
  return r;
}

DeploymentView ObserveDeployment(const Json& d) {
  DeploymentView v;
  if (!d.is_object()) return v;
  v.exists = true;
  v.object = d;
  v.name = StringAt(d, "/metadata/name");
  v.uid = StringAt(d, "/metadata/uid");
  v.resource_version = StringAt(d, "/metadata/resourceVersion");
  v.deleting = !StringAt(d, "/metadata/deletionTimestamp").empty();
  Json::json_pointer op("/metadata/ownerReferences");
  if (d.contains(op) && d.at(op).is_array()) {
    for (const Json& o : d.at(op)) {
      if (!o.is_object()) continue;
      v.owners.push_back(OwnerRef{StringAt(o, "/kind"), StringAt(o, "/name"), StringAt(o, "/uid"),
                                  o.contains("controller") && o["controller"].is_boolean() &&
                                      o["controller"].get<bool>()});
    }
  }
  v.generation = Int64At(d, "/metadata/generation");
  v.observed_generation = Int64At(d, "/status/observedGeneration");
  // The API server defaults spec.replicas to 1; an object without it is from a test.
  Json::json_pointer rp("/spec/replicas");
  v.spec_replicas = d.contains(rp) ? Int32At(d, "/spec/replicas") : 1;
  v.replicas = Int32At(d, "/status/replicas");
  v.updated_replicas = Int32At(d, "/status/updatedReplicas");
  v.ready_replicas = Int32At(d, "/status/readyReplicas");
  v.available_replicas = Int32At(d, "/status/availableReplicas");
  Json::json_pointer tp("/spec/template");
  if (d.contains(tp) && d.at(tp).is_object()) v.pod_template = d.at(tp);
  Json::json_pointer ap("/metadata/annotations");
  if (d.contains(ap) && d.at(ap).is_object()) {
    for (auto it = d.at(ap).begin(); it != d.at(ap).end(); ++it) {
      if (it.value().is_string()) v.annotations[it.key()] = it.value().get<std::string>();
    }
  }
  return v;
}

absl::string_view ActionTypeName(ActionType type) {
  switch (type) {
    case ActionType::kClaimProfile:
      return "ClaimProfile";
    case ActionType::kAddFinalizer:
      return "AddFinalizer";
    case ActionType::kRemoveFinalizer:
      return "RemoveFinalizer";
    case ActionType::kEnrollTarget:
      return "EnrollTarget";
    case ActionType::kScaleTarget:
      return "ScaleTarget";
    case ActionType::kCreateCanary:
      return "CreateCanary";
    case ActionType::kPatchCanary:
      return "PatchCanary";
    case ActionType::kPromoteTemplate:
      return "PromoteTemplate";
    case ActionType::kRestoreTemplate:
      return "RestoreTemplate";
    case ActionType::kDeleteCanary:
      return "DeleteCanary";
    case ActionType::kCreateBaseline:
      return "CreateBaseline";
    case ActionType::kPatchBaseline:
      return "PatchBaseline";
    case ActionType::kDeleteBaseline:
      return "DeleteBaseline";
    case ActionType::kRecordEvent:
      return "RecordEvent";
    case ActionType::kRequeueAfter:
      return "RequeueAfter";
  }
  return "Unknown";
}

std::string DescribeAction(const Action& a) {
  std::string out(ActionTypeName(a.type));
  if (!a.name.empty()) absl::StrAppend(&out, " ", a.name);
  if (a.replicas >= 0) absl::StrAppend(&out, " replicas=", a.replicas);
  if (a.type == ActionType::kRecordEvent) {
    absl::StrAppend(&out, " ", a.event_type, " ", a.reason, ": ", a.message);
  }
  if (a.type == ActionType::kRequeueAfter) absl::StrAppend(&out, " ", FormatGoDuration(a.delay));
  return out;
}

Plan Reconcile(const Profile& profile, const Observations& obs, VerdictSource& verdicts,
               absl::Time now, const MutationOptions& options) {
  return Machine(profile, obs, verdicts, now, options).Run();
}

int32_t CanaryReplicas(int32_t n, int weight) {
  if (n <= 0 || weight <= 0) return 0;
  if (weight >= 100) return n;
  return static_cast<int32_t>((static_cast<int64_t>(n) * weight + 99) / 100);
}

Split SplitReplicas(int32_t n, int weight, int32_t floor) {
  const int32_t canary = CanaryReplicas(n, weight);
  floor = std::clamp<int32_t>(floor, 0, std::max<int32_t>(n, 0));
  if (n - canary >= floor) return Split{n - canary, canary};
  // The target keeps its floor; the canary gets what is above it, one pod at least.
  const int32_t c = weight > 0 ? std::max<int32_t>(1, n - floor) : 0;
  return Split{std::max(n - c, floor), c};
}

ArmSplit SplitWithBaseline(int32_t n, int weight, int32_t floor) {
  const Split split = SplitReplicas(n, weight, floor);
  const int32_t keep = std::clamp<int32_t>(floor, 0, std::max<int32_t>(n, 0));
  const int32_t give = std::max<int32_t>(0, split.stable - keep);
  const int32_t beyond = split.stable + split.canary <= n ? 1 : 0;
  const int32_t baseline = std::min(split.canary, give + beyond);
  return ArmSplit{split.stable - std::min(baseline, give), split.canary, baseline};
}

int32_t PromotionBatch(int32_t n) { return std::max<int32_t>(1, CanaryReplicas(n, 25)); }

namespace {

// A Deployment of one arm beside the target: owned by the profile, the target's selector
// plus `selector_labels`, the target's strategy, minReadySeconds and
// progressDeadlineSeconds.
Json ArmDeployment(const ProfileMeta& meta, const DeploymentView& target, const Json& pod_template,
                   int32_t replicas, const std::string& name, absl::string_view arm,
                   const std::map<std::string, std::string>& selector_labels) {
  Json selector = Json::object();
  Json::json_pointer sp("/spec/selector");
  if (target.object.contains(sp) && target.object.at(sp).is_object()) {
    selector = target.object.at(sp);
  }
  if (!selector.contains("matchLabels") || !selector["matchLabels"].is_object()) {
    selector["matchLabels"] = Json::object();
  }
  for (const auto& [k, v] : selector_labels) selector["matchLabels"][k] = v;
  Json spec = {{"replicas", replicas},
               {"selector", selector},
               {"template", pod_template},
               {"revisionHistoryLimit", 2}};
  for (const char* key : {"strategy", "minReadySeconds", "progressDeadlineSeconds"}) {
    Json::json_pointer p(std::string("/spec/") + key);
    if (target.object.contains(p)) spec[key] = target.object.at(p);
  }
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata",
               {{"name", name},
                {"namespace", meta.namespace_},
                {"labels",
                 {{"app.kubernetes.io/managed-by", "booster-operator"},
                  {"booster.dev/profile", meta.name},
                  {kArmLabel, std::string(arm)}}},
                {"ownerReferences", Json::array({{{"apiVersion", kApiVersion},
                                                  {"kind", kKind},
                                                  {"name", meta.name},
                                                  {"uid", meta.uid},
                                                  {"controller", true},
                                                  {"blockOwnerDeletion", true}}})}}},
              {"spec", spec}};
}

}  // namespace

Json CanaryDeployment(const ProfileMeta& meta, const DeploymentView& target,
                      const Json& pod_template, int32_t replicas) {
  return ArmDeployment(meta, target, pod_template, replicas, target.name + "-booster", kArmCanary,
                       {{kArmLabel, kArmCanary}});
}

Json BaselineDeployment(const ProfileMeta& meta, const DeploymentView& target,
                        const Json& pod_template, int32_t replicas) {
  return ArmDeployment(meta, target, pod_template, replicas, BaselineName(target.name),
                       kArmBaseline, {{kArmLabel, kArmBaseline}, {kFreshBaselineLabel, "true"}});
}

std::string BaselineName(const std::string& target) { return target + "-booster-baseline"; }

std::string StepBaselineMarker(const RolloutStatus& status, const Observations& obs) {
  if (status.baseline_replicas == 0) return TemplateMarker(obs.target.pod_template);
  const std::string fresh = obs.baseline.exists ? TemplateMarker(obs.baseline.pod_template) : "";
  return fresh.empty() ? std::string(kNoFreshBaselineYet) : fresh;
}

}  // namespace booster::rollout
