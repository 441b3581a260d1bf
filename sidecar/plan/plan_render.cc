#include "sidecar/plan/plan_render.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

nlohmann::ordered_json LimitsJson(const Limits& l) {
  nlohmann::ordered_json j;
  j["cgroup_version"] = l.cgroup_version;
  j["cpu_quota_cores"] = l.cpu_quota_cores ? nlohmann::ordered_json(*l.cpu_quota_cores) : nullptr;
  j["cfs_quota_us"] = l.cfs_quota_us;
  j["cfs_period_us"] = l.cfs_period_us;
  j["memory_limit_bytes"] =
      l.memory_limit_bytes ? nlohmann::ordered_json(*l.memory_limit_bytes) : nullptr;
  j["cpuset"] = FormatCpuList(l.cpus);
  j["mems"] = FormatCpuList(l.mems);
  return j;
}

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 20) == 0) {
    return absl::StrCat(b >> 20, " MiB");
  }
  if (b >= 1024 && b % 1024 == 0) return absl::StrCat(b >> 10, " KiB");
  return absl::StrCat(b, " B");
}

}  // namespace

nlohmann::ordered_json TopologyJson(const Topology& t, const Limits& limits) {
  nlohmann::ordered_json j;
  j["source"] = t.source;
  j["packages"] = t.packages;
  j["cpus"] = t.Cpus();
  nlohmann::ordered_json& cores = j["cores"] = nlohmann::ordered_json::array();
  for (const Core& c : t.cores) {
    nlohmann::ordered_json& core = cores.emplace_back();
    core["index"] = c.index;
    core["package"] = c.package;
    core["numa_node"] = c.numa_node;
    core["cpus"] = c.cpus;
    core["threads_total"] = c.threads_total;
  }
  nlohmann::ordered_json& nodes = j["numa_nodes"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < t.numa_nodes.size(); ++i) {
    const NumaNode& n = t.numa_nodes[i];
    nlohmann::ordered_json& node = nodes.emplace_back();
    node["os_index"] = n.os_index;
    node["memory_bytes"] = n.memory_bytes;
    node["cpus"] = n.cpus;
    node["distances"] = i < t.distances.size() ? nlohmann::ordered_json(t.distances[i])
                                               : nlohmann::ordered_json::array();
  }
  j["distances_measured"] = t.distances_measured;
  nlohmann::ordered_json& caches = j["caches"] = nlohmann::ordered_json::array();
  for (const Cache& c : t.caches) {
    nlohmann::ordered_json& cache = caches.emplace_back();
    cache["level"] = c.level;
    cache["type"] = c.type;
    cache["size_bytes"] = c.size_bytes;
    cache["line_bytes"] = c.line_bytes;
    cache["cpus"] = c.cpus;
  }
  j["limits"] = LimitsJson(limits);
  return j;
}

nlohmann::ordered_json PlanJson(const Plan& p) {
  nlohmann::ordered_json env = {{"GOMAXPROCS", absl::StrCat(p.gomaxprocs)}};
  if (p.gomemlimit_bytes > 0) env["GOMEMLIMIT"] = absl::StrCat(p.gomemlimit_bytes);
  env["MALLOC_ARENA_MAX"] = absl::StrCat(p.malloc_arena_max);
  const nlohmann::ordered_json gomemlimit =
      p.gomemlimit_bytes > 0 ? nlohmann::ordered_json(p.gomemlimit_bytes) : nullptr;
  return {{"cpus", p.cpus},
          {"cpu_list", FormatCpuList(p.cpus)},
          {"cpu_order", p.cpu_order},
          {"memory_nodes", p.memory_nodes},
          {"whole_cores", p.whole_cores},
          {"smt_siblings_used", p.smt_siblings_used},
          {"cross_numa", p.cross_numa},
          {"cpus_wanted", p.cpus_wanted},
          {"gomaxprocs", p.gomaxprocs},
          {"gomemlimit", gomemlimit},
          {"malloc_arena_max", p.malloc_arena_max},
          {"env", std::move(env)},
          {"notes", p.notes}};
}

std::string TopologyText(const Topology& t, const Limits& l) {
  std::string out;
  absl::StrAppend(&out, "topology: ", t.source, "\n");
  absl::StrAppend(&out, "  packages: ", t.packages, ", cores: ", t.cores.size(),
                  ", cpus: ", FormatCpuList(t.Cpus()), "\n");
  for (size_t i = 0; i < t.numa_nodes.size(); ++i) {
    const NumaNode& n = t.numa_nodes[i];
    absl::StrAppend(&out, "  numa node ", n.os_index, ": cpus ", FormatCpuList(n.cpus), ", memory ",
                    Bytes(n.memory_bytes));
    if (i < t.distances.size()) {
      absl::StrAppend(&out, ", distances ", absl::StrJoin(t.distances[i], " "),
                      t.distances_measured ? "" : " (assumed)");
    }
    out += "\n";
  }
  for (const Core& c : t.cores) {
    if (c.cpus.size() > 1) {
      absl::StrAppend(&out, "  core ", c.index, " (package ", c.package, ", node ", c.numa_node,
                      "): smt siblings ", absl::StrJoin(c.cpus, ","), "\n");
    }
  }
  for (const Cache& c : t.caches) {
    absl::StrAppend(&out, "  L", c.level, " ", c.type, " ", Bytes(c.size_bytes), ": cpus ",
                    FormatCpuList(c.cpus), "\n");
  }
  absl::StrAppend(&out, "limits (cgroup v", l.cgroup_version, "):\n");
  absl::StrAppend(&out, "  cpu quota: ",
                  l.cpu_quota_cores ? absl::StrCat(*l.cpu_quota_cores, " cores (", l.cfs_quota_us,
                                                   "/", l.cfs_period_us, " us)")
                                    : std::string("none"),
                  "\n");
  absl::StrAppend(&out, "  memory limit: ",
                  l.memory_limit_bytes ? Bytes(*l.memory_limit_bytes) : std::string("none"), "\n");
  absl::StrAppend(&out, "  cpuset: ", l.cpus.empty() ? "all" : FormatCpuList(l.cpus),
                  ", mems: ", l.mems.empty() ? "all" : FormatCpuList(l.mems), "\n");
  return out;
}

std::string PlanText(const Plan& p) {
  std::string out;
  absl::StrAppend(&out, "cpus: ", FormatCpuList(p.cpus), " (", p.whole_cores, " cores",
                  p.smt_siblings_used ? ", smt siblings used" : "",
                  p.cross_numa ? ", across NUMA nodes" : "", ")\n");
  absl::StrAppend(&out, "thread order: ", absl::StrJoin(p.cpu_order, ","), "\n");
  absl::StrAppend(&out, "memory nodes: ",
                  p.memory_nodes.empty() ? "no binding" : FormatCpuList(p.memory_nodes), "\n");
  absl::StrAppend(&out, "GOMAXPROCS=", p.gomaxprocs, "\n");
  absl::StrAppend(&out, "GOMEMLIMIT=",
                  p.gomemlimit_bytes > 0 ? absl::StrCat(p.gomemlimit_bytes) : "(unset)", "\n");
  absl::StrAppend(&out, "MALLOC_ARENA_MAX=", p.malloc_arena_max, "\n");
  for (const std::string& n : p.notes) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

}  // namespace booster::agent
