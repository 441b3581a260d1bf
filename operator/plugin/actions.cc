#include "operator/plugin/actions.h"

#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/status_codec.h"

namespace booster::plugin {
namespace {

using Json = nlohmann::json;
using rollout::Phase;

std::string Str(const Json& j, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string Annotation(const Json& profile, const std::string& key) {
  const Json::json_pointer p("/metadata/annotations");
  if (!profile.contains(p) || !profile.at(p).is_object()) return "";
  const Json& a = profile.at(p);
  auto it = a.find(key);
  return it != a.end() && it->is_string() ? it->get<std::string>() : "";
}

bool SpecPaused(const Json& profile) {
  const Json::json_pointer p("/spec/rollout/paused");
  return profile.contains(p) && profile.at(p).is_boolean() && profile.at(p).get<bool>();
}

Json PatchBase(const Json& profile) {
  Json patch = {{"metadata", {{"resourceVersion", Str(profile, "/metadata/resourceVersion")}}}};
  return patch;
}

}  // namespace

std::string NewToken(absl::Time now, const std::string& current, const std::string& handled) {
  std::string token = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone());
  for (int i = 2; token == current || token == handled; ++i) {
    token =
        absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone()), "-", i);
  }
  return token;
}

absl::StatusOr<Action> PlanAction(Verb verb, const Json& profile, absl::Time now) {
  const std::string name = Str(profile, "/metadata/name");
  const std::string what = absl::StrCat("boosterprofile \"", name, "\"");
  if (!Str(profile, "/metadata/deletionTimestamp").empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " is being deleted: the operator is giving its Deployment back"));
  }
  const std::string phase_name = Str(profile, "/status/phase");
  if (phase_name.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what,
                     " has no status yet: the operator has not picked it up (is it running and "
                     "watching namespace \"",
                     Str(profile, "/metadata/namespace"), "\"?)"));
  }
  const std::optional<Phase> parsed = rollout::ParsePhase(phase_name);
  if (!parsed) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " has an unknown phase \"", phase_name, "\""));
  }
  const Phase phase = *parsed;
  const rollout::RolloutStatus status = rollout::ParseStatus(profile["status"]);
  const int step = status.current_step;
  auto refuse = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot ", VerbName(verb), " ", what, ": ", why));
  };
  auto one_shot = [&](const char* annotation, const std::string& handled,
                      std::string summary) -> Action {
    Action a;
    a.patch = PatchBase(profile);
    std::string token = NewToken(now, Annotation(profile, annotation), handled);
    a.patch["metadata"]["annotations"] = {{annotation, token}};
    a.summary = absl::StrCat(what, " ", summary, " (annotation ", annotation, "=", token, ")");
    return a;
  };

  switch (verb) {
    case Verb::kPause: {
      if (phase == Phase::kPromoting || phase == Phase::kRollingBack) {
        return refuse(absl::StrCat("it is ", phase_name,
                                   "; a promotion or a rollback finishes "
                                   "before anything else"));
      }
      if (phase == Phase::kPromoted || phase == Phase::kRolledBack || phase == Phase::kFailed) {
        return refuse(
            absl::StrCat("the rollout is over (", phase_name, "); retry starts a new one"));
      }
      if (Annotation(profile, rollout::kAnnotationPaused) == "true") {
        return Action{Json(), absl::StrCat(what, " is already paused (annotation ",
                                           rollout::kAnnotationPaused, "=true)")};
      }
      Action a;
      a.patch = PatchBase(profile);
      a.patch["metadata"]["annotations"] = {{rollout::kAnnotationPaused, "true"}};
      a.summary = absl::StrCat(
          what, " paused (annotation ", rollout::kAnnotationPaused, "=true): ",
          phase == Phase::kProgressing || phase == Phase::kPaused
              ? absl::StrCat("the rollout holds at step ", step)
              : "the rollout holds once the Deployment is enrolled, before the first step");
      return a;
    }
    case Verb::kResume: {
      const bool by_annotation = Annotation(profile, rollout::kAnnotationPaused) == "true";
      const bool by_spec = SpecPaused(profile);
      if (!by_annotation && !by_spec) {
        if (phase == Phase::kPaused) {
          return refuse(absl::StrCat(
              "neither the annotation ", rollout::kAnnotationPaused,
              " nor spec.rollout.paused holds it; ",
              status.last_transition ? status.last_transition->message : "see its status"));
        }
        return refuse(absl::StrCat("it is not paused (", phase_name, ")"));
      }
      Action a;
      a.patch = PatchBase(profile);
      std::string done;
      if (by_annotation) {
        a.patch["metadata"]["annotations"] = {{rollout::kAnnotationPaused, nullptr}};
        done = absl::StrCat("annotation ", rollout::kAnnotationPaused, " removed");
      }
      if (by_spec) {
        a.patch["spec"] = {{"rollout", {{"paused", false}}}};
        absl::StrAppend(&done, done.empty() ? "" : ", ", "spec.rollout.paused set to false");
      }
      a.summary = absl::StrCat(what, " resumed (", done, ")");
      if (phase == Phase::kPaused) {
        absl::StrAppend(&a.summary, ": the rollout goes on at step ", std::max(1, step),
                        ", whose observation window starts again");
      }
      return a;
    }
    case Verb::kPromote:
      switch (phase) {
        case Phase::kProgressing:
        case Phase::kPaused:
          return one_shot(rollout::kAnnotationPromoteNow, status.handled.promote_now,
                          absl::StrCat("promoted at step ", step,
                                       ": the remaining steps and their analysis are skipped"));
        case Phase::kPromoting:
          return refuse("it is already being promoted (Promoting)");
        case Phase::kPromoted:
          return refuse("it is already Promoted");
        case Phase::kPending:
        case Phase::kEnrolling:
          return refuse(
              absl::StrCat("it is ", phase_name, "; promote once the first step has started"));
        case Phase::kRollingBack:
        case Phase::kRolledBack:
        case Phase::kFailed:
          return refuse(absl::StrCat("it is ", phase_name, "; retry starts a new rollout"));
      }
      break;
    case Verb::kAbort:
      switch (phase) {
        case Phase::kEnrolling:
        case Phase::kProgressing:
        case Phase::kPaused:
        case Phase::kPromoting:
          return one_shot(
              rollout::kAnnotationAbort, status.handled.abort,
              absl::StrCat("aborted (", phase_name, step > 0 ? absl::StrCat(" at step ", step) : "",
                           "): it rolls back to the Deployment of before"));
        case Phase::kRollingBack:
          return refuse("it is already rolling back (RollingBack)");
        case Phase::kRolledBack:
          return refuse("it is already RolledBack");
        case Phase::kPromoted:
          return refuse(
              "it is Promoted, nothing is in flight (deleting the profile takes the tuning off "
              "the Deployment and leaves the team's latest template)");
        case Phase::kPending:
          return refuse("it is Pending, nothing is in flight yet (delete the profile to drop it)");
        case Phase::kFailed:
          return refuse("it is Failed, nothing is in flight");
      }
      break;
    case Verb::kRetry:
      switch (phase) {
        case Phase::kRolledBack:
        case Phase::kFailed:
        case Phase::kPromoted:
          return one_shot(rollout::kAnnotationRetry, status.handled.retry,
                          absl::StrCat("retried (was ", phase_name,
                                       "): a new rollout starts from Pending at step 1"));
        default:
          return refuse(absl::StrCat("a rollout is in flight (", phase_name,
                                     "); retry applies to a RolledBack, Failed or Promoted "
                                     "profile (abort first)"));
      }
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(VerbName(verb), " does not change a profile"));
}

}  // namespace booster::plugin
