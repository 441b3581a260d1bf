// booster-agent: the per-pod sidecar. Subcommands:
//   topology [--json] [--pid P] [--topology-synthetic D]       what the container may use
//   plan [--json] [--topology-synthetic D] [--cpuset L] [--cpu-quota C] [--memory-limit B]
//        [--cross-numa] [--gomemlimit-fraction F] [--pid P]   the placement plan
//   run --state-dir DIR [--target-pid L | --target-cgroup S | --target-command S] ...
//                                    the agent itself (no selector: the rest of the pod);
//                                    unset flags fall back to the pod's env (loop/run_config.h);
//                                    with BOOSTER_OPERATOR it streams to the operator
//   revert --state-dir DIR [--netns PATH]                      undo what a dead agent left
//   install DIR [--lib PATH] [--allocator NAME]   the init-container mode (default library:
//                                                 $BOOSTER_LIB, else beside the executable)
// See docs/agent.md.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "sidecar/base/file_util.h"
#include "sidecar/base/json_line.h"
#include "sidecar/feedback/feedback_adapter.h"
#include "sidecar/feedback/feedback_reporter.h"
#include "sidecar/install/install.h"
#include "sidecar/loop/agent_loop.h"
#include "sidecar/loop/run_config.h"
#include "sidecar/plan/plan_render.h"
#include "sidecar/plan/planner.h"
#include "sidecar/report/json_lines_reporter.h"
#include "sidecar/topology/cgroup.h"
#include "sidecar/topology/cpu_list.h"
#include "sidecar/topology/topology.h"

namespace booster::agent {
namespace {

constexpr char kAgentVersion[] = "0.1.0";

// --name value / --name=value / --switch. Positional arguments are kept in order.
struct Args {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  bool Has(const std::string& k) const { return flags.count(k) > 0; }
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = flags.find(k);
    return it == flags.end() ? def : it->second;
  }
};

const std::vector<std::string> kSwitches = {"json", "cross-numa", "help"};

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    std::string name = s.substr(2);
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      a.flags[name.substr(0, eq)] = name.substr(eq + 1);
      continue;
    }
    bool is_switch = false;
    for (const std::string& sw : kSwitches) is_switch |= sw == name;
    if (is_switch) {
      a.flags[name] = "true";
    } else if (i + 1 < argc) {
      a.flags[name] = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
  }
  return a;
}

// Topology and limits from the flags: synthetic/offline when asked, else this machine.
absl::Status Gather(const Args& a, Topology* topology, Limits* limits) {
  bool offline = a.Has("topology-synthetic");
  absl::StatusOr<Topology> t =
      offline ? LoadSyntheticTopology(a.Get("topology-synthetic")) : LoadHostTopology();
  if (!t.ok()) return t.status();
  *topology = *std::move(t);
  if (!offline || a.Has("pid")) {
    int pid = getpid();
    if (a.Has("pid") && !absl::SimpleAtoi(a.Get("pid"), &pid)) {
      return absl::InvalidArgumentError("--pid needs a number");
    }
    absl::StatusOr<Limits> l = LimitsOfProcess("/proc", pid);
    if (!l.ok()) return l.status();
    *limits = *std::move(l);
  }
  if (a.Has("cpuset")) {
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(a.Get("cpuset"));
    if (!cpus.ok()) return cpus.status();
    limits->cpus = *cpus;
  }
  if (a.Has("mems")) {
    absl::StatusOr<std::vector<int>> mems = ParseCpuList(a.Get("mems"));
    if (!mems.ok()) return mems.status();
    limits->mems = *mems;
  }
  if (a.Has("cpu-quota")) {
    double q = 0;
    if (!absl::SimpleAtod(a.Get("cpu-quota"), &q) || !(q > 0)) {
      return absl::InvalidArgumentError("--cpu-quota needs a positive number of cores, e.g. 1.5");
    }
    limits->cpu_quota_cores = q;
    limits->cfs_period_us = 100000;
    limits->cfs_quota_us = static_cast<int64_t>(q * 100000);
  }
  if (a.Has("memory-limit")) {
    uint64_t m = 0;
    if (!absl::SimpleAtoi(a.Get("memory-limit"), &m) || m == 0) {
      return absl::InvalidArgumentError("--memory-limit needs a positive number of bytes");
    }
    limits->memory_limit_bytes = m;
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "booster-agent: %s\n", s.ToString().c_str());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int CmdTopology(const Args& a) {
  Topology t;
  Limits l;
  if (absl::Status s = Gather(a, &t, &l); !s.ok()) return Fail(s);
  Topology r = RestrictTopology(t, l.cpus);
  if (a.Has("json")) {
    std::printf("%s\n", JsonLine(TopologyJson(r, l)).c_str());
  } else {
    std::printf("%s", TopologyText(r, l).c_str());
  }
  return 0;
}

absl::StatusOr<PlacementPolicy> PolicyFromArgs(const Args& a) {
  PlacementPolicy p;
  p.allow_cross_numa = a.Has("cross-numa");
  if (a.Has("gomemlimit-fraction") &&
      !absl::SimpleAtod(a.Get("gomemlimit-fraction"), &p.gomemlimit_fraction)) {
    return absl::InvalidArgumentError("--gomemlimit-fraction needs a number in (0, 1]");
  }
  if (a.Has("max-cpus") && !absl::SimpleAtoi(a.Get("max-cpus"), &p.max_cpus)) {
    return absl::InvalidArgumentError("--max-cpus needs a number");
  }
  return p;
}

int CmdPlan(const Args& a) {
  Topology t;
  Limits l;
  if (absl::Status s = Gather(a, &t, &l); !s.ok()) return Fail(s);
  absl::StatusOr<PlacementPolicy> policy = PolicyFromArgs(a);
  if (!policy.ok()) return Fail(policy.status());
  absl::StatusOr<Plan> plan = PlanPlacement(t, l, *policy);
  if (!plan.ok()) return Fail(plan.status());
  if (a.Has("json")) {
    std::printf("%s\n", JsonLine(PlanJson(*plan)).c_str());
  } else {
    std::printf("%s", PlanText(*plan).c_str());
  }
  return 0;
}

// Joins a namespace of another process (e.g. the pod's network namespace when the agent
// runs outside it). Must run before any thread starts: setns applies to the caller only.
absl::Status JoinNamespace(const std::string& path, int nstype) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("open namespace ", path));
  int rc = setns(fd, nstype);
  close(fd);
  if (rc != 0) return absl::PermissionDeniedError(absl::StrCat("setns ", path));
  return absl::OkStatus();
}

absl::Status JoinNamespaces(const std::string& netns, const std::string& ipcns) {
  if (!netns.empty()) {
    if (absl::Status s = JoinNamespace(netns, CLONE_NEWNET); !s.ok()) return s;
  }
  if (!ipcns.empty()) {
    if (absl::Status s = JoinNamespace(ipcns, CLONE_NEWIPC); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status JoinNamespaces(const Args& a) {
  return JoinNamespaces(a.Get("netns"), a.Get("ipcns"));
}

std::string Hostname() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

// The stream to the operator, for `run` with an operator address. Errors name the flag or
// variable at fault and are kInvalidArgument (exit 2): a CA that cannot be read or holds no
// certificate.
absl::StatusOr<std::unique_ptr<FeedbackReporter>> OperatorReporter(const RunOptions& o,
                                                                   Reporter* tee) {
  FeedbackReporterOptions r;
  r.tee = tee;
  FeedbackClientOptions& c = r.client;
  c.address = o.operator_address;
  c.ca_pem = o.operator_ca_pem;
  if (!o.operator_ca_file.empty()) {
    absl::StatusOr<std::string> pem = ReadFile(o.operator_ca_file);
    if (!pem.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(o.operator_ca_source, ": cannot read it: ", pem.status().message()));
    }
    c.ca_pem = *std::move(pem);
  }
  c.token_file = o.token_file;
  c.pod = FeedbackPodFromIdentity(o.agent.identity);
  c.agent_version = o.agent.identity.agent_version;
  absl::StatusOr<std::unique_ptr<FeedbackReporter>> reporter = FeedbackReporter::Create(r);
  if (!reporter.ok() && absl::IsInvalidArgument(reporter.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.operator_ca_source, ": ", reporter.status().message()));
  }
  return reporter;
}

int CmdRun(const Args& a) {
  // Configuration first: a bad flag or variable is exit 2 before anything is touched.
  absl::StatusOr<RunOptions> options = RunOptionsFrom(a.flags, EnvFromProcess(), Hostname());
  if (!options.ok()) return Fail(options.status());
  if (absl::Status s = JoinNamespaces(options->netns, options->ipcns); !s.ok()) return Fail(s);
  AgentConfig& config = options->agent;
  config.identity.incarnation = NewIncarnation();
  config.identity.agent_version = kAgentVersion;
  if (config.selector.pod_peers) {
    absl::StatusOr<std::string> own = ReadFile("/proc/self/cgroup");
    if (own.ok()) config.selector.own_cgroup = *own;
  }
  std::fprintf(stderr, "booster-agent: %s\n", DescribeRunOptions(*options).c_str());

  // Reports: JSON lines (stdout by default), or with an operator its stream, plus the
  // JSON lines only when --report-file was given.
  const bool streaming = !options->operator_address.empty();
  std::unique_ptr<JsonLinesReporter> json;
  if (!streaming || options->report_file_set) {
    absl::StatusOr<std::unique_ptr<JsonLinesReporter>> j =
        JsonLinesReporter::Open(options->report_file);
    if (!j.ok()) return Fail(j.status());
    json = *std::move(j);
  }
  AgentMetrics metrics(config.identity.pod_name);
  metrics.SetIdentity(config.identity.node_name, config.identity.agent_version);
  Reporter* reporter = json.get();
  DirectiveSource* directives = nullptr;
  std::unique_ptr<FileDirectiveSource> directive_file;
  if (!options->directive_file.empty()) {
    directive_file = std::make_unique<FileDirectiveSource>(options->directive_file);
    directives = directive_file.get();
  }
  // Declared before the metrics server, which reads its figures: destroyed after it.
  std::unique_ptr<FeedbackReporter> stream;
  if (streaming) {
    absl::StatusOr<std::unique_ptr<FeedbackReporter>> s = OperatorReporter(*options, json.get());
    if (!s.ok()) return Fail(s.status());
    stream = *std::move(s);
    FeedbackReporter* r = stream.get();
    metrics.EnableFeedbackMetrics([r] { return r->Stats(); });
    reporter = r;
    directives = r->directives();
  }
  std::unique_ptr<MetricsServer> server;
  if (!options->metrics_address.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> s =
        MetricsServer::Start(options->metrics_address, &metrics);
    if (!s.ok()) return Fail(s.status());
    server = *std::move(s);
    std::fprintf(stderr, "booster-agent: /metrics and /healthz on port %d\n", server->port());
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  Agent agent(config, &RealClock::Get(), directives, reporter, &metrics);
  absl::Status s = agent.Run(g_stop);
  // After the revert: its Applied is queued, and Stop() sends it before the stream ends.
  if (stream != nullptr) stream->Stop();
  if (!s.ok()) return Fail(s);
  return 0;
}

int CmdRevert(const Args& a) {
  if (absl::Status s = JoinNamespaces(a); !s.ok()) return Fail(s);
  if (!a.Has("state-dir")) return Fail(absl::InvalidArgumentError("--state-dir is required"));
  absl::StatusOr<Journal> j = Journal::Open(a.Get("state-dir") + "/agent.journal");
  if (!j.ok()) return Fail(j.status());
  Appliers appliers(&*j);
  std::vector<std::string> log;
  absl::Status s = appliers.RevertAll(&log);
  for (const std::string& l : log) std::printf("%s\n", l.c_str());
  if (!s.ok()) return Fail(s);
  return 0;
}

int CmdInstall(const Args& a) {
  if (a.positional.size() != 1) {
    return Fail(absl::InvalidArgumentError("usage: booster-agent install <dir> [--lib PATH]"));
  }
  InstallOptions o;
  o.dir = a.positional[0];
  const char* env = std::getenv("BOOSTER_LIB");
  std::string fallback;
  if (env != nullptr) {
    fallback = env;
  } else {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) fallback = LibraryBesideExecutable(std::string(exe, static_cast<size_t>(n)));
  }
  o.library = a.Get("lib", fallback);
  o.allocator = a.Get("allocator", "none");
  absl::StatusOr<std::vector<std::string>> files = InstallRuntime(o);
  if (!files.ok()) return Fail(files.status());
  for (const std::string& f : *files) std::printf("installed %s\n", f.c_str());
  return 0;
}

void Usage() {
  std::fprintf(
      stderr,
      "usage: booster-agent <command> [flags]\n"
      "  topology [--json] [--pid P] [--topology-synthetic D] [--cpuset L]\n"
      "  plan [--json] [--topology-synthetic D] [--cpuset L] [--mems L]\n"
      "       [--cpu-quota CORES] [--memory-limit BYTES] [--cross-numa]\n"
      "       [--gomemlimit-fraction F] [--max-cpus N] [--pid P]\n"
      "  run --state-dir DIR [--target-pid L] [--target-cgroup S] [--target-command S]\n"
      "      [--directive-file F] [--report-file F|-] [--control-file F]\n"
      "      [--metrics-address [HOST]:PORT] [--app-metrics JSON] [--app-metrics-url URL]\n"
      "      [--window DURATION] [--tick DURATION] [--netns PATH] [--ipcns PATH]\n"
      "      [--pod NAME] [--pod-namespace NS] [--pod-uid UID] [--node NAME]\n"
      "      [--profile NS/NAME] [--arm A] [--mode observe|tune] [--template-hash H]\n"
      "      [--containers A,B] [--operator HOST:PORT] [--operator-ca-file F]\n"
      "      [--token-file F] [--max-ticks N]\n"
      "      (each unset flag falls back to its variable: POD_NAME, BOOSTER_WINDOW, ...;\n"
      "       docs/agent.md lists them)\n"
      "  revert --state-dir DIR [--netns PATH] [--ipcns PATH]\n"
      "  install DIR [--lib PATH] [--allocator none|jemalloc|mimalloc|tcmalloc|PATH]\n");
}

}  // namespace
}  // namespace booster::agent

int main(int argc, char** argv) {
  using namespace booster::agent;  // NOLINT(google-build-using-namespace)
  if (argc < 2) {
    Usage();
    return 2;
  }
  std::string cmd = argv[1];
  absl::StatusOr<Args> args = ParseArgs(argc, argv, 2);
  if (!args.ok()) return Fail(args.status());
  if (cmd == "topology") return CmdTopology(*args);
  if (cmd == "plan") return CmdPlan(*args);
  if (cmd == "run") return CmdRun(*args);
  if (cmd == "revert") return CmdRevert(*args);
  if (cmd == "install") return CmdInstall(*args);
  Usage();
  return 2;
}
