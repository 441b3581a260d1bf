#include "operator/plugin/plugin.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "operator/kube/api_status.h"
#include "operator/plugin/actions.h"
#include "operator/plugin/evidence.h"
#include "operator/plugin/profile_view.h"
#include "operator/plugin/table.h"

namespace booster::plugin {
namespace {

using kube::Json;

constexpr char kProfilesName[] = "boosterprofiles.booster.dev";
// A one-shot verb re-reads and decides again after a 409; the operator writes the
// status often during a rollout, so a few attempts may be needed.
constexpr int kActAttempts = 5;

// The API server's own words, without the "HTTP 404 NotFound: " the client puts first.
std::string ServerMessage(const absl::Status& s) {
  absl::string_view m = s.message();
  if (absl::StartsWith(m, "HTTP ")) {
    size_t colon = m.find(": ");
    if (colon != absl::string_view::npos) m.remove_prefix(colon + 2);
  }
  return std::string(m);
}

std::string Where(const Request& r) {
  return r.ns.empty() ? "in all namespaces" : absl::StrCat("in namespace \"", r.ns, "\"");
}

std::string Named(const Request& r) {
  return r.name.empty() ? r.resource : absl::StrCat(r.resource, " \"", r.name, "\"");
}

}  // namespace

std::string DescribeError(const absl::Status& s, const Request& r, const std::string& server) {
  const int http = kube::HttpCode(s);
  const std::string said = ServerMessage(s);
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      if (r.resource == kProfilesName && !r.name.empty() &&
          absl::StrContains(said, absl::StrCat("\"", r.name, "\" not found"))) {
        return absl::StrCat("boosterprofile \"", r.name, "\" not found in namespace \"", r.ns,
                            "\"");
      }
      if (http == 404) {
        return absl::StrCat("the server ", server, " does not serve ", r.resource,
                            " (is the BoosterProfile CRD installed? kubectl apply -f "
                            "crds/boosterprofile.yaml): ",
                            said);
      }
      break;
    case absl::StatusCode::kPermissionDenied:
      return absl::StrCat("forbidden: you may not ", r.verb, " ", Named(r), " ", Where(r),
                          " (RBAC of the kubeconfig's user): ", said);
    case absl::StatusCode::kUnauthenticated:
      return absl::StrCat("the server ", server,
                          " did not accept the kubeconfig's credentials (401): ", said);
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
      if (http == 0) {
        return absl::StrCat("cannot reach the Kubernetes API server at ", server, ": ", said);
      }
      return absl::StrCat("the API server at ", server, " could not ", r.verb, " ", Named(r),
                          " (HTTP ", http, "): ", said);
    case absl::StatusCode::kAborted:
      return absl::StrCat(Named(r),
                          " kept changing while it was written (HTTP 409); try again: ", said);
    case absl::StatusCode::kInvalidArgument:
      if (http != 0) {
        return absl::StrCat("the API server refused to ", r.verb, " ", Named(r), ": ", said);
      }
      break;
    default:
      break;
  }
  return absl::StrCat("cannot ", r.verb, " ", Named(r), " ", Where(r), ": ", said);
}

absl::StatusOr<kube::Config> LoadConfig(const Options& o, const kube::EnvFunc& getenv) {
  std::string path = o.kubeconfig;
  if (path.empty()) {
    std::string env = getenv("KUBECONFIG");
    path = env.substr(0, env.find(':'));
  }
  if (path.empty() && o.context.empty() && !getenv("KUBERNETES_SERVICE_HOST").empty()) {
    absl::StatusOr<kube::Config> c = kube::InClusterConfig(getenv);
    if (!c.ok()) {
      return absl::Status(c.status().code(),
                          absl::StrCat("in-cluster config: ", c.status().message()));
    }
    return c;
  }
  if (path.empty()) {
    const std::string home = getenv("HOME");
    if (home.empty()) {
      return absl::NotFoundError("no kubeconfig: set --kubeconfig or KUBECONFIG (HOME is unset)");
    }
    path = home + "/.kube/config";
  }
  absl::StatusOr<kube::Config> c = kube::LoadKubeconfig(path, o.context);
  if (!c.ok()) {
    return absl::Status(c.status().code(), absl::StrCat("cannot load the kubeconfig ", path, ": ",
                                                        c.status().message()));
  }
  return c;
}

Plugin::Plugin(kube::Client* client, std::string default_namespace, std::ostream& out,
               std::ostream& err, Clock* clock)
    : client_(client), out_(out), err_(err), clock_(clock), ns_(std::move(default_namespace)) {}

int Plugin::Run(const Options& o) {
  if (!o.namespace_.empty()) ns_ = o.namespace_;
  switch (o.verb) {
    case Verb::kGet:
      return Get(o);
    case Verb::kStatus:
      return Status(o);
    case Verb::kExplain:
      return Explain(o);
    case Verb::kPause:
    case Verb::kResume:
    case Verb::kPromote:
    case Verb::kAbort:
    case Verb::kRetry:
      return Act(o);
    case Verb::kNone:
      break;
  }
  err_ << Usage(Verb::kNone);
  return 1;
}

int Plugin::Fail(const absl::Status& status, const Request& request) {
  err_ << "Error: " << DescribeError(status, request, client_->config().server) << "\n";
  return 1;
}

absl::StatusOr<Json> Plugin::GetProfile(const std::string& name) {
  return client_->Get(kProfiles, ns_, name);
}

Json Plugin::Events(const Json& profile) {
  const std::string name = profile.value("/metadata/name"_json_pointer, "");
  kube::ListOptions list;
  list.field_selector =
      absl::StrCat("involvedObject.kind=BoosterProfile,involvedObject.name=", name);
  absl::StatusOr<Json> events = client_->ListAll(kube::kEvents, ns_, list);
  if (!events.ok()) {
    err_ << "Warning: no step history: "
         << DescribeError(events.status(), Request{"list", "events", "", ns_},
                          client_->config().server)
         << "\n";
    return Json::array();
  }
  return events->value("items", Json::array());
}

int Plugin::Get(const Options& o) {
  const bool json = o.output == "json";
  const bool wide = o.output == "wide";
  if (!o.name.empty()) {
    absl::StatusOr<Json> p = GetProfile(o.name);
    if (!p.ok()) return Fail(p.status(), {"get", kProfilesName, o.name, ns_});
    if (json) {
      out_ << p->dump(2) << "\n";
    } else {
      out_ << RenderTable(GetHeader(false, wide), {GetRow(*p, clock_->Now(), false, wide)});
    }
    return 0;
  }
  const std::string ns = o.all_namespaces ? "" : ns_;
  absl::StatusOr<Json> list = client_->ListAll(kProfiles, ns, {});
  if (!list.ok()) return Fail(list.status(), {"list", kProfilesName, "", ns});
  Json items = list->value("items", Json::array());
  if (json) {
    Json out = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
    out_ << out.dump(2) << "\n";
    return 0;
  }
  if (items.empty()) {
    err_ << (o.all_namespaces ? std::string("No resources found\n")
                              : absl::StrCat("No resources found in ", ns, " namespace.\n"));
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Json& p : items) rows.push_back(GetRow(p, clock_->Now(), o.all_namespaces, wide));
  out_ << RenderTable(GetHeader(o.all_namespaces, wide), rows);
  return 0;
}

int Plugin::Status(const Options& o) {
  const Request request{"get", kProfilesName, o.name, ns_};
  absl::StatusOr<Json> p = GetProfile(o.name);
  if (!p.ok()) return Fail(p.status(), request);
  std::vector<HistoryEntry> history = BuildHistory(*p, Events(*p));
  out_ << RenderStatus(*p, history, clock_->Now());
  if (!o.watch) return 0;

  // -w: new history lines as they come, until the rollout is over. Events are re-listed
  // every interval (a profile has a few dozen at most).
  std::set<std::string> seen;
  for (const HistoryEntry& h : history) seen.insert(h.key);
  std::string last_phase = p->value("/status/phase"_json_pointer, "");
  while (!RolloutEnded(*p)) {
    out_.flush();
    clock_->SleepFor(o.poll_interval);
    p = GetProfile(o.name);
    if (!p.ok()) return Fail(p.status(), request);
    for (const HistoryEntry& h : BuildHistory(*p, Events(*p))) {
      if (seen.insert(h.key).second) out_ << HistoryLine(h);
    }
    last_phase = p->value("/status/phase"_json_pointer, "");
  }
  out_ << "boosterprofile \"" << o.name << "\" is " << last_phase << "\n";
  return 0;
}

int Plugin::Explain(const Options& o) {
  absl::StatusOr<Json> p = GetProfile(o.name);
  if (!p.ok()) return Fail(p.status(), {"get", kProfilesName, o.name, ns_});
  out_ << RenderExplain(*p);
  return 0;
}

int Plugin::Act(const Options& o) {
  absl::Status last;
  for (int attempt = 0; attempt < kActAttempts; ++attempt) {
    absl::StatusOr<Json> p = GetProfile(o.name);
    if (!p.ok()) return Fail(p.status(), {"get", kProfilesName, o.name, ns_});
    absl::StatusOr<Action> action = PlanAction(o.verb, *p, clock_->Now());
    if (!action.ok()) {
      err_ << "Error: " << action.status().message() << "\n";
      return 1;
    }
    if (action->patch.is_null()) {
      out_ << action->summary << "\n";
      return 0;
    }
    absl::StatusOr<Json> patched =
        client_->Patch(kProfiles, ns_, o.name, kube::PatchType::kMerge, action->patch);
    if (patched.ok()) {
      out_ << action->summary << "\n";
      return 0;
    }
    last = patched.status();
    if (!kube::IsConflict(last)) break;
  }
  return Fail(last, {"patch", kProfilesName, o.name, ns_});
}

int RunPlugin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              const ClientFactory& make_client, const kube::EnvFunc& getenv, Clock* clock) {
  absl::StatusOr<Options> o = ParseArgs(args);
  if (!o.ok()) {
    err << "Error: " << o.status().message() << "\n";
    std::optional<Verb> verb = args.empty() ? std::nullopt : ParseVerb(args[0]);
    err << "See 'kubectl booster " << (verb ? absl::StrCat(VerbName(*verb), " ") : "")
        << "--help'.\n";
    return 1;
  }
  if (o->help) {
    out << Usage(o->verb);
    return 0;
  }
  absl::StatusOr<kube::Config> config = LoadConfig(*o, getenv);
  if (!config.ok()) {
    err << "Error: " << config.status().message() << "\n";
    return 1;
  }
  config->request_timeout = o->request_timeout;
  config->user_agent = "kubectl-booster/0.1";
  config->max_retries = 2;
  absl::StatusOr<std::unique_ptr<kube::Client>> client = make_client(*config);
  if (!client.ok()) {
    err << "Error: cannot set up a client for " << config->server << ": "
        << client.status().message() << "\n";
    return 1;
  }
  Plugin plugin(client->get(), config->default_namespace, out, err, clock);
  return plugin.Run(*o);
}

}  // namespace booster::plugin
