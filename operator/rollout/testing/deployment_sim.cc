#include "operator/rollout/testing/deployment_sim.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/names.h"

namespace booster::rollout::testing {
namespace {

// nlohmann::json's id for "unsuccessful: a test op did not hold".
constexpr int kTestOpFailed = 501;

// The patched object, or why the API server would refuse the patch.
absl::Status Patched(const Json& object, const Json& patch, Json* out) {
  if (!patch.is_array()) return absl::InvalidArgumentError("a JSON Patch is an array");
  try {
    *out = object.patch(patch);
    return absl::OkStatus();
  } catch (const Json::exception& e) {
    if (e.id == kTestOpFailed) return absl::AbortedError(e.what());
    return absl::InvalidArgumentError(e.what());
  }
}

}  // namespace

Json DeploymentObject(const std::string& name, const std::string& ns, const std::string& uid,
                      int32_t replicas, const Json& pod_template) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"uid", uid},
            {"generation", 1},
            {"resourceVersion", "1"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector",
             {{"matchLabels",
               pod_template.value(Json::json_pointer("/metadata/labels"), Json::object())}}},
            {"template", pod_template}}}};
}

Json ProfileObject(const std::string& name, const std::string& ns, const std::string& uid,
                   const Json& spec) {
  return {{"apiVersion", kApiVersion},
          {"kind", kKind},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"uid", uid},
            {"generation", 1},
            {"finalizers", Json::array({kFinalizer})}}},
          {"spec", spec}};
}

int32_t SpecReplicas(const Json& deployment) {
  return deployment.is_null() ? 0 : deployment["spec"]["replicas"].get<int32_t>();
}

std::string ProfileOwnerUid(const Json& object) {
  for (const Json& o : object["metadata"].value("ownerReferences", Json::array())) {
    if (o.value("kind", "") == kKind) return o.value("uid", "");
  }
  return "";
}

bool SetDeploymentStatus(Json& deployment, int32_t replicas, int32_t ready) {
  Json status = {{"observedGeneration", deployment["metadata"]["generation"]},
                 {"replicas", replicas},
                 {"updatedReplicas", replicas},
                 {"readyReplicas", ready},
                 {"availableReplicas", ready}};
  if (deployment.contains("status") && deployment["status"] == status) return false;
  deployment["status"] = std::move(status);
  return true;
}

void Settle(Json& deployment) {
  const int32_t r = SpecReplicas(deployment);
  SetDeploymentStatus(deployment, r, r);
}

void Unsettle(Json& deployment) {
  deployment["status"]["availableReplicas"] = 0;
  deployment["status"]["readyReplicas"] = 0;
}

DeploymentSim::DeploymentSim(Json target) : DeploymentSim(std::move(target), Options{}) {}

DeploymentSim::DeploymentSim(Json target, Options options)
    : options_(std::move(options)), target_(std::move(target)) {
  if (!target_.is_null()) Settle(target_);
}

absl::Status DeploymentSim::Execute(const Action& a, Json& profile) {
  switch (a.type) {
    case ActionType::kClaimProfile: {
      Json claimed;
      absl::Status s = Patched(profile, a.body, &claimed);
      if (s.ok()) profile = std::move(claimed);
      return s;
    }
    case ActionType::kAddFinalizer:
      profile["metadata"]["finalizers"].push_back(kFinalizer);
      return absl::OkStatus();
    case ActionType::kRemoveFinalizer:
    case ActionType::kRecordEvent:
    case ActionType::kRequeueAfter:
      return absl::OkStatus();
    case ActionType::kEnrollTarget:
    case ActionType::kScaleTarget:
    case ActionType::kPromoteTemplate:
    case ActionType::kRestoreTemplate:
      if (target_.is_null()) return absl::NotFoundError("no target Deployment");
      return PatchDeployment(target_, a.body);
    case ActionType::kCreateCanary:
      return Create(canary_, "canary", options_.canary_uid, a);
    case ActionType::kPatchCanary:
      if (canary_.is_null()) return absl::NotFoundError("no canary Deployment");
      return PatchDeployment(canary_, a.body);
    case ActionType::kDeleteCanary:
      return Delete(canary_, "canary", a);
    case ActionType::kCreateBaseline:
      return Create(baseline_, "fresh baseline", options_.baseline_uid, a);
    case ActionType::kPatchBaseline:
      if (baseline_.is_null()) return absl::NotFoundError("no fresh baseline Deployment");
      return PatchDeployment(baseline_, a.body);
    case ActionType::kDeleteBaseline:
      return Delete(baseline_, "fresh baseline", a);
  }
  return absl::InvalidArgumentError("unknown action");
}

namespace {

// The API server's validation that matters here: spec.selector.matchLabels must match the
// template's labels (422 otherwise).
absl::Status SelectorMatchesTemplate(const Json& d) {
  const Json::json_pointer sel("/spec/selector/matchLabels");
  const Json::json_pointer labels("/spec/template/metadata/labels");
  if (!d.contains(sel) || !d.at(sel).is_object()) return absl::OkStatus();
  const Json have = d.contains(labels) ? d.at(labels) : Json::object();
  for (auto it = d.at(sel).begin(); it != d.at(sel).end(); ++it) {
    if (!have.is_object() || !have.contains(it.key()) || have[it.key()] != it.value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "`selector` does not match template `labels`: ", it.key(), "=", it.value().dump(),
          " is not among ", have.dump()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DeploymentSim::Create(Json& slot, absl::string_view what,
                                   const std::function<std::string()>& uid, const Action& a) {
  if (!slot.is_null()) {
    return absl::AlreadyExistsError(absl::StrCat("the ", what, "'s name is taken"));
  }
  if (absl::Status s = SelectorMatchesTemplate(a.body); !s.ok()) return s;
  slot = a.body;
  slot["metadata"]["uid"] = uid();  // asked only when the create goes through
  slot["metadata"]["generation"] = 1;
  slot["status"] = Json::object();
  NewVersion(slot);
  return absl::OkStatus();
}

absl::Status DeploymentSim::Delete(Json& slot, absl::string_view what, const Action& a) {
  if (slot.is_null()) return absl::NotFoundError(absl::StrCat("no ", what, " Deployment"));
  if (slot["metadata"]["uid"] != a.uid) {
    return absl::AbortedError(
        absl::StrCat("uid precondition: ", a.uid, " is not ", slot["metadata"]["uid"].dump()));
  }
  slot = nullptr;
  return absl::OkStatus();
}

void DeploymentSim::SettleAll() {
  if (!target_.is_null()) Settle(target_);
  if (!canary_.is_null()) Settle(canary_);
  if (!baseline_.is_null()) Settle(baseline_);
}

absl::Status DeploymentSim::PatchDeployment(Json& object, const Json& patch) {
  Json patched;
  absl::Status s = Patched(object, patch, &patched);
  if (!s.ok()) return s;
  if (s = SelectorMatchesTemplate(patched); !s.ok()) return s;
  const bool spec_changed = patched["spec"] != object["spec"];
  object = std::move(patched);
  if (spec_changed) {
    object["metadata"]["generation"] = object["metadata"]["generation"].get<int64_t>() + 1;
  }
  NewVersion(object);
  return absl::OkStatus();
}

void DeploymentSim::NewVersion(Json& object) {
  object["metadata"]["resourceVersion"] = absl::StrCat(++resource_version_);
}

}  // namespace booster::rollout::testing
