// booster-agent: the per-pod sidecar. Subcommands:
//   topology [--json] [--pid P] [--topology-synthetic D]       what the container may use
//   plan [--json] [--topology-synthetic D] [--cpuset L] [--cpu-quota C] [--memory-limit B]
//        [--cross-numa] [--gomemlimit-fraction F] [--pid P]   the placement plan
// See docs/agent.md.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sidecar/cgroup.h"
#include "sidecar/cpu_list.h"
#include "sidecar/json_writer.h"
#include "sidecar/planner.h"
#include "sidecar/render.h"
#include "sidecar/topology.h"

namespace booster::agent {
namespace {

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

// Limits of a live process (its cgroups and affinity), or none when planning offline.
absl::StatusOr<Limits> LiveLimits(int pid) {
  absl::StatusOr<CgroupPaths> paths = FindCgroups("/proc", pid);
  if (!paths.ok()) return paths.status();
  absl::StatusOr<Limits> limits = ReadLimits(*paths);
  if (!limits.ok()) return limits.status();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) == 0) {
    std::vector<int> aff;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) aff.push_back(c);
    }
    limits->cpus = limits->cpus.empty() ? aff : IntersectSorted(limits->cpus, aff);
  }
  return limits;
}

// Topology and limits from the flags: synthetic/offline when asked, else this machine.
absl::Status Gather(const Args& a, Topology* topology, Limits* limits) {
  bool offline = a.Has("topology-synthetic");
  absl::StatusOr<Topology> t = offline ? LoadSyntheticTopology(a.Get("topology-synthetic"))
                                       : LoadHostTopology();
  if (!t.ok()) return t.status();
  *topology = *std::move(t);
  if (!offline || a.Has("pid")) {
    int pid = getpid();
    if (a.Has("pid") && !absl::SimpleAtoi(a.Get("pid"), &pid)) {
      return absl::InvalidArgumentError("--pid needs a number");
    }
    absl::StatusOr<Limits> l = LiveLimits(pid);
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
    JsonWriter w;
    WriteTopologyJson(r, l, &w);
    std::printf("%s\n", w.str().c_str());
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
    JsonWriter w;
    WritePlanJson(*plan, &w);
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("%s", PlanText(*plan).c_str());
  }
  return 0;
}

void Usage() {
  std::fprintf(stderr,
               "usage: booster-agent <command> [flags]\n"
               "  topology [--json] [--pid P] [--topology-synthetic D] [--cpuset L]\n"
               "  plan [--json] [--topology-synthetic D] [--cpuset L] [--mems L]\n"
               "       [--cpu-quota CORES] [--memory-limit BYTES] [--cross-numa]\n"
               "       [--gomemlimit-fraction F] [--max-cpus N] [--pid P]\n");
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
  Usage();
  return 2;
}
