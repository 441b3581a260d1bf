// .status to and from JSON (status_codec.h).
#include "operator/rollout/profile/status_codec.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/rollout/profile/json_fields.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::rollout {
namespace {

using profile_internal::Field;
using profile_internal::IntAt;
using profile_internal::IntAt32;
using profile_internal::StringAt;

absl::Time TimeAt(const Json& j, absl::string_view key) {
  return ParseTimeOr(StringAt(j, key), absl::InfinitePast());
}

void PutTime(Json& j, const char* key, absl::Time t) {
  if (t != absl::InfinitePast()) j[key] = FormatRfc3339(t);
}

}  // namespace

RolloutStatus ParseStatus(const Json& j) {
  RolloutStatus s;
  if (!j.is_object()) return s;
  s.phase = ParsePhase(StringAt(j, "phase")).value_or(Phase::kPending);
  s.observed_generation = IntAt(j, "observedGeneration");
  s.current_step = IntAt32(j, "currentStep");
  s.canary_weight = IntAt32(j, "canaryWeight");
  s.total_replicas = IntAt32(j, "totalReplicas");
  s.original_replicas = IntAt32(j, "originalReplicas");
  s.stable_replicas = IntAt32(j, "stableReplicas");
  s.canary_replicas = IntAt32(j, "canaryReplicas");
  s.baseline_replicas = IntAt32(j, "baselineReplicas");
  s.target_floor = IntAt32(j, "targetFloor");
  s.canary_name = StringAt(j, "canaryName");
  s.target_uid = StringAt(j, "targetUID");
  s.target_name = StringAt(j, "targetName");
  s.team_template_hash = StringAt(j, "teamTemplateHash");
  s.rollout_hash = StringAt(j, "rolloutHash");
  s.experiment_hash = StringAt(j, "experimentHash");
  s.baseline_tuning = StringAt(j, "baselineTuning");
  if (const Json* search = Field(j, "search"); search != nullptr && search->is_object()) {
    s.search = *search;
  }
  if (const Json* t = Field(j, "analysisTemplate"); t != nullptr && t->is_object()) {
    s.analysis_template =
        AnalysisTemplateStatus{StringAt(*t, "kind"), StringAt(*t, "name"), IntAt(*t, "generation")};
  }
  s.phase_start_time = TimeAt(j, "phaseStartTime");
  s.step_start_time = TimeAt(j, "stepStartTime");
  s.analysis_start_time = TimeAt(j, "analysisStartTime");
  s.not_ready_since = TimeAt(j, "notReadySince");
  s.extensions = IntAt32(j, "extensions");
  if (const Json* h = Field(j, "handled")) {
    s.handled.abort = StringAt(*h, "abort");
    s.handled.promote_now = StringAt(*h, "promoteNow");
    s.handled.retry = StringAt(*h, "retry");
  }
  if (const Json* t = Field(j, "lastTransition"); t != nullptr && t->is_object()) {
    s.last_transition = Transition{StringAt(*t, "from"), StringAt(*t, "to"), StringAt(*t, "reason"),
                                   StringAt(*t, "message"), TimeAt(*t, "time")};
  }
  if (const Json* d = Field(j, "lastDecision"); d != nullptr && d->is_object()) {
    Decision dec;
    dec.verdict = StringAt(*d, "verdict");
    dec.step = IntAt32(*d, "step");
    dec.reason = StringAt(*d, "reason");
    dec.message = StringAt(*d, "message");
    dec.time = TimeAt(*d, "time");
    if (const Json* dr = Field(*d, "dryRun"); dr != nullptr && dr->is_boolean()) {
      dec.dry_run = dr->get<bool>();
    }
    if (const Json* e = Field(*d, "evidence"); e != nullptr && e->is_object()) {
      for (auto it = e->begin(); it != e->end(); ++it) {
        if (it.value().is_string()) dec.evidence[it.key()] = it.value().get<std::string>();
      }
    }
    s.last_decision = dec;
  }
  if (const Json* a = Field(j, "arms"); a != nullptr && a->is_object()) {
    ArmsReport arms;
    arms.step = IntAt32(*a, "step");
    for (auto [key, arm] :
         {std::pair{"baseline", &arms.baseline}, std::pair{"canary", &arms.canary}}) {
      if (const Json* r = Field(*a, key); r != nullptr && r->is_object()) {
        arm->pods = IntAt32(*r, "pods");
        if (const Json* w = Field(*r, "windows"); w != nullptr && w->is_number_integer()) {
          arm->windows = w->get<int64_t>();
        }
      }
    }
    s.arms = arms;
  }
  if (const Json* c = Field(j, "conditions"); c != nullptr && c->is_array()) {
    for (const Json& e : *c) {
      if (!e.is_object() || StringAt(e, "type").empty()) continue;
      s.conditions.push_back(Condition{
          StringAt(e, "type"), StringAt(e, "status"), StringAt(e, "reason"), StringAt(e, "message"),
          IntAt(e, "observedGeneration"), TimeAt(e, "lastTransitionTime")});
    }
  }
  return s;
}

Json StatusToJson(const RolloutStatus& s) {
  Json j = Json::object();
  j["phase"] = std::string(PhaseName(s.phase));
  j["observedGeneration"] = s.observed_generation;
  j["currentStep"] = s.current_step;
  j["canaryWeight"] = s.canary_weight;
  j["totalReplicas"] = s.total_replicas;
  j["originalReplicas"] = s.original_replicas;
  j["stableReplicas"] = s.stable_replicas;
  j["canaryReplicas"] = s.canary_replicas;
  if (s.baseline_replicas > 0) j["baselineReplicas"] = s.baseline_replicas;
  if (s.target_floor > 0) j["targetFloor"] = s.target_floor;
  if (!s.canary_name.empty()) j["canaryName"] = s.canary_name;
  if (!s.target_uid.empty()) j["targetUID"] = s.target_uid;
  if (!s.target_name.empty()) j["targetName"] = s.target_name;
  if (!s.team_template_hash.empty()) j["teamTemplateHash"] = s.team_template_hash;
  if (!s.rollout_hash.empty()) j["rolloutHash"] = s.rollout_hash;
  if (!s.experiment_hash.empty()) j["experimentHash"] = s.experiment_hash;
  if (!s.baseline_tuning.empty()) j["baselineTuning"] = s.baseline_tuning;
  if (s.search.is_object()) j["search"] = s.search;
  if (s.analysis_template) {
    j["analysisTemplate"] = {{"kind", s.analysis_template->kind},
                             {"name", s.analysis_template->name},
                             {"generation", s.analysis_template->generation}};
  }
  PutTime(j, "phaseStartTime", s.phase_start_time);
  PutTime(j, "stepStartTime", s.step_start_time);
  PutTime(j, "analysisStartTime", s.analysis_start_time);
  PutTime(j, "notReadySince", s.not_ready_since);
  j["extensions"] = s.extensions;
  Json handled = Json::object();
  if (!s.handled.abort.empty()) handled["abort"] = s.handled.abort;
  if (!s.handled.promote_now.empty()) handled["promoteNow"] = s.handled.promote_now;
  if (!s.handled.retry.empty()) handled["retry"] = s.handled.retry;
  if (!handled.empty()) j["handled"] = handled;
  if (s.last_transition) {
    Json t = {{"from", s.last_transition->from},
              {"to", s.last_transition->to},
              {"reason", s.last_transition->reason},
              {"message", s.last_transition->message}};
    PutTime(t, "time", s.last_transition->time);
    j["lastTransition"] = t;
  }
  if (s.arms) {
    j["arms"] = {
        {"step", s.arms->step},
        {"baseline", {{"pods", s.arms->baseline.pods}, {"windows", s.arms->baseline.windows}}},
        {"canary", {{"pods", s.arms->canary.pods}, {"windows", s.arms->canary.windows}}}};
  }
  if (s.last_decision) {
    Json d = {{"verdict", s.last_decision->verdict},
              {"step", s.last_decision->step},
              {"reason", s.last_decision->reason},
              {"message", s.last_decision->message},
              {"evidence", Json::object()}};
    for (const auto& [k, v] : s.last_decision->evidence) d["evidence"][k] = v;
    PutTime(d, "time", s.last_decision->time);
    if (s.last_decision->dry_run) d["dryRun"] = true;
    j["lastDecision"] = d;
  }
  Json conds = Json::array();
  for (const Condition& c : s.conditions) {
    Json e = {{"type", c.type},
              {"status", c.status},
              {"reason", c.reason},
              {"message", c.message},
              {"observedGeneration", c.observed_generation}};
    PutTime(e, "lastTransitionTime", c.last_transition_time);
    conds.push_back(e);
  }
  j["conditions"] = conds;
  return j;
}

}  // namespace booster::rollout
