// The command line of kubectl-booster, parsed the way kubectl parses its own: the verb
// and the profile's name as positional arguments, global flags before or after them
// (-n/--namespace, --kubeconfig, --context, --request-timeout), `--flag value` and
// `--flag=value`, and the verb's own flags (-A and -o for get, -w for status). Pure: the
// usage texts live here too, so `--help` of every verb is tested without a cluster.
//
//   absl::StatusOr<Options> o = ParseArgs({"status", "web", "-n", "shop", "-w"});
//   if (o->help) std::cout << Usage(o->verb);
#ifndef BOOSTER_OPERATOR_PLUGIN_ARGS_H_
#define BOOSTER_OPERATOR_PLUGIN_ARGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace booster::plugin {

// kNone: no verb was given (`kubectl booster`, `kubectl booster --help`).
enum class Verb { kNone, kGet, kStatus, kPause, kResume, kPromote, kAbort, kRetry, kExplain };

struct Options {
  Verb verb = Verb::kNone;
  std::string name;             // the profile; "" only for get (all profiles)
  std::string namespace_;       // "" = the kubeconfig context's namespace
  bool all_namespaces = false;  // get -A
  std::string kubeconfig;       // "" = $KUBECONFIG, then ~/.kube/config
  std::string context;          // "" = current-context
  std::string output;           // get -o: "", "wide" or "json"
  bool watch = false;           // status -w
  bool help = false;            // print Usage(verb) and exit 0
  absl::Duration request_timeout = absl::Seconds(15);
  absl::Duration poll_interval = absl::Seconds(1);  // status -w
};

// `args` are argv[1..]. A bad command line is kInvalidArgument with a message a user can
// act on (unknown verb or flag, a missing name, a flag the verb does not take).
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args);

absl::string_view VerbName(Verb verb);
std::optional<Verb> ParseVerb(absl::string_view name);
// Every verb, in the order the usage lists them.
std::vector<Verb> AllVerbs();

// The usage of one verb, or of the whole plugin for Verb::kNone.
std::string Usage(Verb verb);

}  // namespace booster::plugin

#endif  // BOOSTER_OPERATOR_PLUGIN_ARGS_H_
