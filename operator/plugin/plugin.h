// kubectl-booster's verbs against the API server: the thin shell around the pure parts
// (args.h, profile_view.h, evidence.h, actions.h). It reads BoosterProfiles and their
// Events through a kube::Client, writes only merge patches of a profile's annotations
// (and spec.rollout.paused), and turns every API error into a message that says what
// failed: the missing profile, the forbidden verb and resource, the server that could
// not be reached. Exit codes: 0 done, 1 any error.
//
//   int code = RunPlugin(args, std::cout, std::cerr, [](const kube::Config& c) {
//     return kube::NewClient(c);
//   });
#ifndef BOOSTER_OPERATOR_PLUGIN_PLUGIN_H_
#define BOOSTER_OPERATOR_PLUGIN_PLUGIN_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/plugin/args.h"

namespace booster::plugin {

inline const kube::Resource kProfiles{"booster.dev", "v1alpha1", "boosterprofiles", true};

// What a request was for, to say so when it fails.
struct Request {
  std::string verb;      // the API verb: get, list, patch
  std::string resource;  // "boosterprofiles.booster.dev", "events"
  std::string name;      // "" for a list
  std::string ns;        // "" for all namespaces
};

// The message after "Error: " for a failed request to `server`.
std::string DescribeError(const absl::Status& status, const Request& request,
                          const std::string& server);

// The kube config the flags ask for: --kubeconfig, else the first file of $KUBECONFIG,
// else in-cluster (only without --context), else ~/.kube/config; --context picks the
// context. `getenv` is injected for tests.
absl::StatusOr<kube::Config> LoadConfig(const Options& options, const kube::EnvFunc& getenv);

// Runs one parsed command with `client`; `default_namespace` is the kubeconfig
// context's. Writes results to `out`, errors and warnings to `err`; returns the exit
// code. `clock` paces `status -w`.
class Plugin {
 public:
  // Nothing is owned; all must outlive the Plugin.
  Plugin(kube::Client* client, std::string default_namespace, std::ostream& out, std::ostream& err,
         Clock* clock = &RealClock::Get());

  int Run(const Options& options);

 private:
  int Get(const Options& o);
  int Status(const Options& o);
  int Explain(const Options& o);
  int Act(const Options& o);

  absl::StatusOr<kube::Json> GetProfile(const std::string& name);
  // The profile's Events; a failure is a warning (the history is then empty).
  kube::Json Events(const kube::Json& profile);
  int Fail(const absl::Status& status, const Request& request);

  kube::Client* const client_;
  std::ostream& out_;
  std::ostream& err_;
  Clock* const clock_;
  std::string ns_;
};

// The whole program: parses `args` (argv[1..]), loads the config, makes a client with
// `make_client`, runs the verb. Usage errors print the verb's usage hint and return 1.
using ClientFactory =
    std::function<absl::StatusOr<std::unique_ptr<kube::Client>>(const kube::Config&)>;
int RunPlugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              const ClientFactory& make_client, const kube::EnvFunc& getenv,
              Clock* clock = &RealClock::Get());

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_PLUGIN_H_
