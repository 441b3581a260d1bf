// A simulated API server and Deployment controller for the rollout state machine's tests
// and benchmarks: it holds one target Deployment, the canary's name and the fresh
// baseline's name, carries out a
// Plan's actions the way the reconciler sends them (JSON Patch on the target and the
// profile, create / patch / delete-with-uid-precondition on the canary), bumps
// metadata.generation on a spec change and resourceVersion on every write, and reports
// the status the Deployment controller would. Test and bench code only.
//
//   DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, pod_template));
//   Plan plan = Reconcile(profile, Observations{ObserveDeployment(sim.target()),
//                                               ObserveDeployment(sim.canary()), ""}, ...);
//   for (const Action& a : plan.actions) {
//     if (!sim.Execute(a, profile_json).ok()) break;  // refused: the pass ends, as in the
//   }                                                  // reconciler
//   sim.SettleAll();                                   // every pod up and available
#ifndef BOOSTER_OPERATOR_ROLLOUT_TESTING_DEPLOYMENT_SIM_H_
#define BOOSTER_OPERATOR_ROLLOUT_TESTING_DEPLOYMENT_SIM_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"
#include "operator/rollout/state_machine.h"

namespace booster::rollout::testing {

// An apps/v1 Deployment whose selector is its template's labels, generation 1,
// resourceVersion "1" and no status yet.
Json DeploymentObject(const std::string& name, const std::string& ns, const std::string& uid,
                      int32_t replicas, const Json& pod_template);

// A BoosterProfile with the operator's finalizer, generation 1 and no status yet.
Json ProfileObject(const std::string& name, const std::string& ns, const std::string& uid,
                   const Json& spec);

// spec.replicas, 0 for an absent (null) Deployment.
int32_t SpecReplicas(const Json& deployment);

// The uid of the BoosterProfile in the object's ownerReferences, "" when none.
std::string ProfileOwnerUid(const Json& object);

// The status the Deployment controller writes once it has seen the current generation:
// `replicas` pods of the current template, `ready` of them ready and available. True when
// the status changed (the watch event a reconciler would see).
bool SetDeploymentStatus(Json& deployment, int32_t replicas, int32_t ready);

// Every pod the spec asks for is up and available.
void Settle(Json& deployment);

// The pods of the current template are up but none is available yet.
void Unsettle(Json& deployment);

class DeploymentSim {
 public:
  struct Options {
    // The uid the API server gives each canary it creates, asked once per creation.
    std::function<std::string()> canary_uid = [] { return std::string("canary-uid"); };
    // The same for the fresh baseline (analysis.baseline Fresh).
    std::function<std::string()> baseline_uid = [] { return std::string("baseline-uid"); };
  };

  // `target` may be null (no Deployment of that name); it is settled as it is given.
  explicit DeploymentSim(Json target);
  DeploymentSim(Json target, Options options);

  Json& target() { return target_; }
  const Json& target() const { return target_; }
  // Null while there is no Deployment under the canary's name; a test may put one there.
  Json& canary() { return canary_; }
  const Json& canary() const { return canary_; }
  // The same for the fresh baseline's name.
  Json& baseline() { return baseline_; }
  const Json& baseline() const { return baseline_; }

  // Carries out one action against the API server. `profile` is the BoosterProfile the
  // plan is for: kClaimProfile patches it and kAddFinalizer adds the operator's
  // finalizer. kRemoveFinalizer, kRecordEvent and kRequeueAfter change nothing here: the
  // caller records the profile's removal, the events and the requeues.
  //
  // Nothing changes when the write is refused:
  //   kAborted          a JSON Patch test op no longer holds (the object changed since it
  //                     was observed; the API server answers 422), or a delete's uid
  //                     precondition fails (409): re-read and plan again;
  //   kInvalidArgument  the patch does not apply for another reason, or is not an array,
  //                     or the Deployment's selector would not match its template's labels
  //                     (the API server's 422);
  //   kNotFound         no Deployment to patch or delete;
  //   kAlreadyExists    the canary's (or fresh baseline's) name is taken (409 on create).
  absl::Status Execute(const Action& action, Json& profile);

  // Settles the target, the canary and the fresh baseline (those that exist).
  void SettleAll();

 private:
  // Applies a JSON Patch to `object`, bumping its generation when the spec changed and its
  // resourceVersion always.
  absl::Status PatchDeployment(Json& object, const Json& patch);
  void NewVersion(Json& object);
  absl::Status Create(Json& slot, absl::string_view what,
                      const std::function<std::string()>& uid, const Action& a);
  absl::Status Delete(Json& slot, absl::string_view what, const Action& a);

  Options options_;
  Json target_;
  Json canary_ = nullptr;
  Json baseline_ = nullptr;
  int resource_version_ = 1000;
};

}  // namespace booster::rollout::testing

#endif  // BOOSTER_OPERATOR_ROLLOUT_TESTING_DEPLOYMENT_SIM_H_
