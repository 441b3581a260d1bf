#include "sidecar/render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/cpu_list.h"

namespace booster::agent {
namespace {

void WriteLimitsJson(const Limits& l, JsonWriter* w) {
  w->BeginObject();
  w->Key("cgroup_version");
  w->Int(l.cgroup_version);
  w->Key("cpu_quota_cores");
  if (l.cpu_quota_cores)
    w->Double(*l.cpu_quota_cores);
  else
    w->Null();
  w->Key("cfs_quota_us");
  w->Int(l.cfs_quota_us);
  w->Key("cfs_period_us");
  w->Int(l.cfs_period_us);
  w->Key("memory_limit_bytes");
  if (l.memory_limit_bytes)
    w->Uint(*l.memory_limit_bytes);
  else
    w->Null();
  w->Key("cpuset");
  w->String(FormatCpuList(l.cpus));
  w->Key("mems");
  w->String(FormatCpuList(l.mems));
  w->EndObject();
}

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 20) == 0) {
    return absl::StrCat(b >> 20, " MiB");
  }
  if (b >= 1024 && b % 1024 == 0) return absl::StrCat(b >> 10, " KiB");
  return absl::StrCat(b, " B");
}

}  // namespace

void WriteTopologyJson(const Topology& t, const Limits& limits, JsonWriter* w) {
  w->BeginObject();
  w->Key("source");
  w->String(t.source);
  w->Key("packages");
  w->Int(t.packages);
  w->Key("cpus");
  w->IntArray(t.Cpus());
  w->Key("cores");
  w->BeginArray();
  for (const Core& c : t.cores) {
    w->BeginObject();
    w->Key("index");
    w->Int(c.index);
    w->Key("package");
    w->Int(c.package);
    w->Key("numa_node");
    w->Int(c.numa_node);
    w->Key("cpus");
    w->IntArray(c.cpus);
    w->Key("threads_total");
    w->Int(c.threads_total);
    w->EndObject();
  }
  w->EndArray();
  w->Key("numa_nodes");
  w->BeginArray();
  for (size_t i = 0; i < t.numa_nodes.size(); ++i) {
    const NumaNode& n = t.numa_nodes[i];
    w->BeginObject();
    w->Key("os_index");
    w->Int(n.os_index);
    w->Key("memory_bytes");
    w->Uint(n.memory_bytes);
    w->Key("cpus");
    w->IntArray(n.cpus);
    w->Key("distances");
    w->BeginArray();
    if (i < t.distances.size()) {
      for (uint64_t d : t.distances[i]) w->Uint(d);
    }
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
  w->Key("distances_measured");
  w->Bool(t.distances_measured);
  w->Key("caches");
  w->BeginArray();
  for (const Cache& c : t.caches) {
    w->BeginObject();
    w->Key("level");
    w->Int(c.level);
    w->Key("type");
    w->String(c.type);
    w->Key("size_bytes");
    w->Uint(c.size_bytes);
    w->Key("line_bytes");
    w->Int(c.line_bytes);
    w->Key("cpus");
    w->IntArray(c.cpus);
    w->EndObject();
  }
  w->EndArray();
  w->Key("limits");
  WriteLimitsJson(limits, w);
  w->EndObject();
}

void WritePlanJson(const Plan& p, JsonWriter* w) {
  w->BeginObject();
  w->Key("cpus");
  w->IntArray(p.cpus);
  w->Key("cpu_list");
  w->String(FormatCpuList(p.cpus));
  w->Key("cpu_order");
  w->IntArray(p.cpu_order);
  w->Key("memory_nodes");
  w->IntArray(p.memory_nodes);
  w->Key("whole_cores");
  w->Int(p.whole_cores);
  w->Key("smt_siblings_used");
  w->Bool(p.smt_siblings_used);
  w->Key("cross_numa");
  w->Bool(p.cross_numa);
  w->Key("cpus_wanted");
  w->Int(p.cpus_wanted);
  w->Key("gomaxprocs");
  w->Int(p.gomaxprocs);
  w->Key("gomemlimit");
  if (p.gomemlimit_bytes > 0)
    w->Uint(p.gomemlimit_bytes);
  else
    w->Null();
  w->Key("malloc_arena_max");
  w->Int(p.malloc_arena_max);
  w->Key("env");
  w->BeginObject();
  w->Key("GOMAXPROCS");
  w->String(absl::StrCat(p.gomaxprocs));
  if (p.gomemlimit_bytes > 0) {
    w->Key("GOMEMLIMIT");
    w->String(absl::StrCat(p.gomemlimit_bytes));
  }
  w->Key("MALLOC_ARENA_MAX");
  w->String(absl::StrCat(p.malloc_arena_max));
  w->EndObject();
  w->Key("notes");
  w->StringArray(p.notes);
  w->EndObject();
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
