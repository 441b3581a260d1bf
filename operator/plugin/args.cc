#include "operator/plugin/args.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace booster::plugin {
namespace {

constexpr char kGlobalFlags[] = R"(
Global flags:
  -n, --namespace NS        the profile's namespace (default: the kubeconfig context's)
      --kubeconfig PATH     kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
      --context NAME        kubeconfig context (default: current-context)
      --request-timeout D   give up on one API request after D (default 15s; 30s, 1m, 500ms)
  -h, --help                this help
)";

struct VerbInfo {
  Verb verb;
  const char* name;
  const char* summary;
  const char* usage;
};

// The usage text of each verb: what it does, what it writes and when it refuses.
const VerbInfo kVerbs[] = {
    {Verb::kGet, "get", "list profiles with their phase, step, weight and last verdict",
     R"(Usage: kubectl booster get [NAME] [-n NS | -A] [-o wide|json]

Lists BoosterProfiles: the phase, the step (current/total), the canary's weight, the
last step verdict (status.lastDecision) and the age. With NAME, that profile only.

Flags:
  -A, --all-namespaces      profiles of every namespace
  -o, --output FORMAT       wide: adds the canary's replicas and the reason of the last
                            transition; json: the objects as the API server returns them
)"},
    {Verb::kStatus, "status", "a profile's state and step history (live with -w)",
     R"(Usage: kubectl booster status NAME [-n NS] [-w]

Shows where the rollout stands (phase, step, weight, replicas, last verdict, conditions)
and its step history: every step started, passed, extended, failed, paused, resumed or
promoted, with its verdict and its time. The history comes from the profile's Events,
which the API server keeps for a limited time (1 hour by default).

Flags:
  -w, --watch               keep printing the history as it happens; ends when the
                            rollout is Promoted, RolledBack or Failed (or on Ctrl-C)
      --interval D          how often -w reads the profile and its Events (default 1s)
)"},
    {Verb::kPause, "pause", "hold the rollout at its current step",
     R"(Usage: kubectl booster pause NAME [-n NS]

Sets the annotation booster.dev/paused=true on the profile. The operator holds the
rollout at its current step (Progressing -> Paused) with the replicas as they are;
during enrollment it pauses once enrolled, before the first canary. Refused during
promotion or rollback (they finish first) and once the rollout is over.
)"},
    {Verb::kResume, "resume", "resume a paused rollout at the same step",
     R"(Usage: kubectl booster resume NAME [-n NS]

Removes the annotation booster.dev/paused and sets spec.rollout.paused to false if it
was true. The operator resumes at the same step, whose observation window starts again.
Refused when nothing pauses the profile (a profile held by hpaPolicy: Pause resumes
when the HorizontalPodAutoscaler goes or the policy changes).
)"},
    {Verb::kPromote, "promote", "promote now, skipping the remaining steps and analysis",
     R"(Usage: kubectl booster promote NAME [-n NS]

Sets the annotation booster.dev/promote-now to a new token. A Progressing or Paused
rollout goes to Promoting at once: the remaining steps and their analysis are skipped
and the tuning is written into the target Deployment. Refused in any other phase
(e.g. a profile already Promoted or RolledBack; retry starts a new rollout).
)"},
    {Verb::kAbort, "abort", "roll back now, restoring the Deployment of before",
     R"(Usage: kubectl booster abort NAME [-n NS]

Sets the annotation booster.dev/abort to a new token. An Enrolling, Progressing, Paused
or Promoting rollout rolls back: the canary is deleted and the target gets its replicas
and the pod template it had before the rollout. Refused when nothing is in flight.
)"},
    {Verb::kRetry, "retry", "start a new rollout of a RolledBack, Failed or Promoted profile",
     R"(Usage: kubectl booster retry NAME [-n NS]

Sets the annotation booster.dev/retry to a new token. A RolledBack, Failed or Promoted
profile starts a new rollout from Pending, at step 1. Refused while a rollout is in
flight (abort it first).
)"},
    {Verb::kExplain, "explain", "the evidence behind the last verdict, as a table",
     R"(Usage: kubectl booster explain NAME [-n NS]

Prints the last step verdict (status.lastDecision) and its evidence. For a verdict of
the metrics judge: per metric, each arm's windows and median, the change of the
canary against the baseline, the p-value of the one-sided test and the metric's own
verdict. For a verdict by time: how long the step ran against how long it had to.
A profile in dry run (spec.rollout.analysis.dryRun) says so, and a verdict that would
have rolled back without it says what it would have done.
)"},
};

const VerbInfo* Info(Verb verb) {
  for (const VerbInfo& v : kVerbs) {
    if (v.verb == verb) return &v;
  }
  return nullptr;
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view text) {
  absl::Duration d;
  int64_t seconds;
  if (absl::SimpleAtoi(text, &seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid value \"", text, "\" for ", flag, ": want a duration like 30s"));
  }
  if (d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " must be positive, got \"", text, "\""));
  }
  return d;
}

}  // namespace

absl::string_view VerbName(Verb verb) {
  const VerbInfo* info = Info(verb);
  return info == nullptr ? "" : info->name;
}

std::optional<Verb> ParseVerb(absl::string_view name) {
  for (const VerbInfo& v : kVerbs) {
    if (name == v.name) return v.verb;
  }
  return std::nullopt;
}

std::vector<Verb> AllVerbs() {
  std::vector<Verb> verbs;
  for (const VerbInfo& v : kVerbs) verbs.push_back(v.verb);
  return verbs;
}

std::string Usage(Verb verb) {
  if (const VerbInfo* info = Info(verb)) return absl::StrCat(info->usage, kGlobalFlags);
  std::string out =
      "kubectl booster: drive Booster's canary rollouts (BoosterProfiles) from kubectl.\n\n"
      "Usage: kubectl booster VERB [NAME] [flags]\n\nVerbs:\n";
  for (const VerbInfo& v : kVerbs) {
    absl::StrAppend(&out, "  ", v.name, std::string(10 - std::string(v.name).size(), ' '),
                    v.summary, "\n");
  }
  absl::StrAppend(&out, kGlobalFlags,
                  "\nkubectl booster VERB --help shows what a verb does and writes.\n");
  return out;
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> positional;
  bool all_namespaces_set = false, output_set = false, watch_set = false, interval_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    // Split "--flag=value" and "-nvalue"; remember whether the value came attached.
    std::string flag = arg;
    std::optional<std::string> value;
    if (absl::StartsWith(arg, "--")) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      }
    } else if (arg.size() > 2) {
      flag = arg.substr(0, 2);
      value = arg[2] == '=' ? arg.substr(3) : arg.substr(2);
    }
    auto take_value = [&]() -> absl::StatusOr<std::string> {
      if (value) return *value;
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", flag, " needs a value"));
      }
      return args[++i];
    };
    auto no_value = [&]() -> absl::Status {
      if (value) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", flag, " takes no value"));
      }
      return absl::OkStatus();
    };
    if (flag == "-h" || flag == "--help") {
      if (absl::Status s = no_value(); !s.ok()) return s;
      o.help = true;
    } else if (flag == "-n" || flag == "--namespace") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      if (v->empty()) return absl::InvalidArgumentError("flag --namespace needs a non-empty value");
      o.namespace_ = *v;
    } else if (flag == "--kubeconfig") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      o.kubeconfig = *v;
    } else if (flag == "--context") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      o.context = *v;
    } else if (flag == "--request-timeout") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      absl::StatusOr<absl::Duration> d = ParseDurationFlag(flag, *v);
      if (!d.ok()) return d.status();
      o.request_timeout = *d;
    } else if (flag == "-A" || flag == "--all-namespaces") {
      if (absl::Status s = no_value(); !s.ok()) return s;
      o.all_namespaces = all_namespaces_set = true;
    } else if (flag == "-o" || flag == "--output") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      if (*v != "wide" && *v != "json") {
        return absl::InvalidArgumentError(
            absl::StrCat("unsupported output format \"", *v, "\": use wide or json"));
      }
      o.output = *v;
      output_set = true;
    } else if (flag == "-w" || flag == "--watch") {
      if (absl::Status s = no_value(); !s.ok()) return s;
      o.watch = watch_set = true;
    } else if (flag == "--interval") {
      absl::StatusOr<std::string> v = take_value();
      if (!v.ok()) return v.status();
      absl::StatusOr<absl::Duration> d = ParseDurationFlag(flag, *v);
      if (!d.ok()) return d.status();
      o.poll_interval = *d;
      interval_set = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
    }
  }

  // `kubectl booster help [VERB]` is --help too.
  if (!positional.empty() && positional[0] == "help") {
    o.help = true;
    positional.erase(positional.begin());
  }
  if (positional.empty()) {
    if (o.help) return o;
    return absl::InvalidArgumentError("no verb given");
  }
  std::optional<Verb> verb = ParseVerb(positional[0]);
  if (!verb)
    return absl::InvalidArgumentError(absl::StrCat("unknown verb \"", positional[0], "\""));
  o.verb = *verb;
  if (o.help) return o;  // help wins over everything else, like kubectl

  const std::string verb_name(VerbName(o.verb));
  if (positional.size() > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb_name, " takes one profile name, got ", positional.size() - 1));
  }
  if (positional.size() == 2) o.name = positional[1];
  if (o.name.empty() && o.verb != Verb::kGet) {
    return absl::InvalidArgumentError(absl::StrCat(verb_name, " needs the profile's NAME"));
  }
  auto only = [&](bool set, const char* flag, Verb allowed) -> absl::Status {
    if (set && o.verb != allowed) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", flag, " is for ", VerbName(allowed), ", not for ", verb_name));
    }
    return absl::OkStatus();
  };
  for (absl::Status s :
       {only(all_namespaces_set, "--all-namespaces", Verb::kGet),
        only(output_set, "--output", Verb::kGet), only(watch_set, "--watch", Verb::kStatus),
        only(interval_set, "--interval", Verb::kStatus)}) {
    if (!s.ok()) return s;
  }
  if (o.all_namespaces && !o.name.empty()) {
    return absl::InvalidArgumentError("a NAME cannot be used with --all-namespaces");
  }
  if (o.all_namespaces && !o.namespace_.empty()) {
    return absl::InvalidArgumentError("--namespace and --all-namespaces exclude each other");
  }
  return o;
}

}  // namespace booster::plugin
