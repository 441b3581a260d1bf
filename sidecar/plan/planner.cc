#include "sidecar/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/go_runtime.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

// Quotas are often written as 1.999... by rounding in the kubelet (m -> us): treat values
// within this of an integer as that integer.
constexpr double kQuotaEpsilon = 1e-6;

struct NodeCandidate {
  int numa_index = 0;              // position in topology.numa_nodes
  std::vector<const Core*> cores;  // allowed cores of this node, preference order
  int cpu_count = 0;
};

// Cores a container owns outright come first: a sibling thread outside the cpuset
// belongs to someone else and competes for the same core.
bool CorePreferred(const Core* a, const Core* b) {
  bool a_whole = static_cast<int>(a->cpus.size()) == a->threads_total;
  bool b_whole = static_cast<int>(b->cpus.size()) == b->threads_total;
  if (a_whole != b_whole) return a_whole;
  return a->index < b->index;
}

// Takes `n` CPUs from `cores` (preference order): one thread per core first, then the
// second thread of each core, and so on; or, packed, every thread of a core before the
// next core (the fewest cores).
std::vector<int> TakeCpus(const std::vector<const Core*>& cores, int n, bool pack) {
  std::vector<int> out;
  if (pack) {
    for (const Core* c : cores) {
      for (int cpu : c->cpus) {
        if (static_cast<int>(out.size()) == n) return out;
        out.push_back(cpu);
      }
    }
    return out;
  }
  for (size_t round = 0; static_cast<int>(out.size()) < n; ++round) {
    bool any = false;
    for (const Core* c : cores) {
      if (static_cast<int>(out.size()) == n) break;
      if (round < c->cpus.size()) {
        out.push_back(c->cpus[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

}  // namespace

absl::StatusOr<Plan> PlanPlacement(const Topology& topology, const Limits& limits,
                                   const PlacementPolicy& policy) {
  if (policy.gomemlimit_fraction <= 0 || policy.gomemlimit_fraction > 1) {
    return absl::InvalidArgumentError("gomemlimit fraction must be in (0, 1]");
  }
  if (policy.max_cpus < 0) return absl::InvalidArgumentError("max_cpus must be >= 0");
  if (limits.cpu_quota_cores.has_value() && !(*limits.cpu_quota_cores > 0)) {
    return absl::InvalidArgumentError("CPU quota must be positive");
  }
  Topology allowed = RestrictTopology(topology, limits.cpus);
  std::vector<int> allowed_cpus = allowed.Cpus();
  if (!limits.cpus.empty()) {
    std::vector<int> inside = IntersectSorted(topology.Cpus(), limits.cpus);
    if (inside.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("the cpuset ", FormatCpuList(limits.cpus),
                                                     " has no CPU of this topology (CPUs ",
                                                     FormatCpuList(topology.Cpus()), ")"));
    }
  }
  if (allowed_cpus.empty()) return absl::InvalidArgumentError("the topology has no CPUs");

  Plan plan;
  const int total = static_cast<int>(allowed_cpus.size());
  int wanted = total;
  if (limits.cpu_quota_cores.has_value()) {
    double q = *limits.cpu_quota_cores;
    wanted = std::max(1, static_cast<int>(std::ceil(q - kQuotaEpsilon)));
    plan.notes.push_back(absl::StrCat("CPU quota ", q, " cores -> ", wanted, " CPUs"));
  } else if (policy.max_cpus > 0) {
    wanted = policy.max_cpus;
  }
  if (wanted > total) {
    plan.notes.push_back(absl::StrCat("only ", total, " CPUs allowed; using all of them"));
    wanted = total;
  }
  plan.cpus_wanted = wanted;

  // Group allowed cores by NUMA node.
  std::vector<NodeCandidate> nodes;
  for (size_t i = 0; i < allowed.numa_nodes.size(); ++i) {
    NodeCandidate c;
    c.numa_index = static_cast<int>(i);
    for (const Core& core : allowed.cores) {
      if (core.numa_node == allowed.numa_nodes[i].os_index) {
        c.cores.push_back(&core);
        c.cpu_count += static_cast<int>(core.cpus.size());
      }
    }
    std::sort(c.cores.begin(), c.cores.end(), CorePreferred);
    if (c.cpu_count > 0) nodes.push_back(std::move(c));
  }
  if (nodes.empty()) {  // cores without a NUMA node: one pseudo node
    NodeCandidate c;
    for (const Core& core : allowed.cores) {
      c.cores.push_back(&core);
      c.cpu_count += static_cast<int>(core.cpus.size());
    }
    std::sort(c.cores.begin(), c.cores.end(), CorePreferred);
    c.numa_index = -1;
    nodes.push_back(std::move(c));
  }

  // Best single node: one that fits with whole cores, then one that fits at all, then
  // the most free cores (less SMT sharing), then the lowest node number.
  auto better = [wanted](const NodeCandidate& a, const NodeCandidate& b) {
    bool a_fits = a.cpu_count >= wanted;
    bool b_fits = b.cpu_count >= wanted;
    if (a_fits != b_fits) return a_fits;
    bool a_cores = static_cast<int>(a.cores.size()) >= wanted;
    bool b_cores = static_cast<int>(b.cores.size()) >= wanted;
    if (a_cores != b_cores) return a_cores;
    if (!a_fits && a.cpu_count != b.cpu_count) return a.cpu_count > b.cpu_count;
    if (a.cores.size() != b.cores.size()) return a.cores.size() > b.cores.size();
    return a.numa_index < b.numa_index;
  };
  std::vector<const NodeCandidate*> order;
  for (const NodeCandidate& n : nodes) order.push_back(&n);
  std::sort(order.begin(), order.end(),
            [&](const NodeCandidate* a, const NodeCandidate* b) { return better(*a, *b); });

  std::vector<const NodeCandidate*> chosen = {order.front()};
  int have = order.front()->cpu_count;
  if (have < wanted) {
    if (policy.allow_cross_numa) {
      // Grow by the nearest remaining node (sum of distances to the chosen ones).
      std::vector<const NodeCandidate*> rest(order.begin() + 1, order.end());
      while (have < wanted && !rest.empty()) {
        auto dist = [&](const NodeCandidate* n) {
          uint64_t d = 0;
          for (const NodeCandidate* c : chosen) {
            if (n->numa_index >= 0 && c->numa_index >= 0 &&
                static_cast<size_t>(n->numa_index) < allowed.distances.size() &&
                static_cast<size_t>(c->numa_index) < allowed.distances.size()) {
              d += allowed.distances[c->numa_index][n->numa_index];
            }
          }
          return d;
        };
        auto next = std::min_element(rest.begin(), rest.end(),
                                     [&](const NodeCandidate* a, const NodeCandidate* b) {
                                       uint64_t da = dist(a);
                                       uint64_t db = dist(b);
                                       if (da != db) return da < db;
                                       if (a->cpu_count != b->cpu_count) {
                                         return a->cpu_count > b->cpu_count;
                                       }
                                       return a->numa_index < b->numa_index;
                                     });
        have += (*next)->cpu_count;
        chosen.push_back(*next);
        rest.erase(next);
      }
      plan.cross_numa = chosen.size() > 1;
      plan.notes.push_back(absl::StrCat(wanted, " CPUs do not fit one NUMA node; spanning ",
                                        chosen.size(), " nodes"));
    } else {
      plan.notes.push_back(absl::StrCat(wanted, " CPUs do not fit one NUMA node; capped at ", have,
                                        " (allow cross-NUMA placement to span nodes)"));
      wanted = have;
    }
  }

  // Whole cores first across the chosen nodes, in the order the nodes were chosen.
  std::vector<const Core*> cores;
  for (const NodeCandidate* n : chosen) cores.insert(cores.end(), n->cores.begin(), n->cores.end());
  plan.cpu_order = TakeCpus(cores, wanted, policy.pack_cores);
  plan.cpus = plan.cpu_order;
  std::sort(plan.cpus.begin(), plan.cpus.end());

  std::set<int> used_cores;
  std::set<int> numa_used;
  for (const Core* c : cores) {
    int taken = 0;
    for (int cpu : c->cpus) {
      if (std::binary_search(plan.cpus.begin(), plan.cpus.end(), cpu)) ++taken;
    }
    if (taken > 0) {
      used_cores.insert(c->index);
      numa_used.insert(c->numa_node);
    }
    if (taken > 1) plan.smt_siblings_used = true;
  }
  plan.whole_cores = static_cast<int>(used_cores.size());

  // Memory nodes: those of the chosen CPUs, never outside cpuset.mems.
  if (nodes.front().numa_index >= 0) {
    for (int n : numa_used) {
      if (limits.mems.empty() || std::binary_search(limits.mems.begin(), limits.mems.end(), n)) {
        plan.memory_nodes.push_back(n);
      }
    }
    if (plan.memory_nodes.empty()) {
      plan.notes.push_back("cpuset.mems excludes the chosen CPUs' nodes: no memory binding");
    }
  }

  // GOMAXPROCS and GOMEMLIMIT by the rule the operator uses too (common/go_runtime.h):
  // the whole cores of the quota, at least 1, never above the CPUs granted.
  int granted = static_cast<int>(plan.cpus.size());
  std::optional<int64_t> quota_millis;
  if (limits.cpu_quota_cores.has_value()) {
    quota_millis = std::llround(*limits.cpu_quota_cores * 1000);
  }
  plan.gomaxprocs = GoMaxProcsFor(quota_millis, granted).value_or(granted);
  if (limits.memory_limit_bytes.has_value()) {
    int percent =
        std::clamp(static_cast<int>(std::lround(policy.gomemlimit_fraction * 100)), 1, 100);
    plan.gomemlimit_bytes = static_cast<uint64_t>(
        GoMemLimitBytes(
            static_cast<int64_t>(std::min<uint64_t>(*limits.memory_limit_bytes, INT64_MAX)),
            percent)
            .value_or(0));
  }
  // One glibc arena per thread that can run at once; glibc's default is 8 per core of
  // the machine, which multiplies RSS in a small container.
  plan.malloc_arena_max = std::max(1, granted);
  return plan;
}

}  // namespace booster::agent
