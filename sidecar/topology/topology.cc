#include "sidecar/topology/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::vector<int> OsIndices(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  if (set == nullptr) return out;
  for (int i = hwloc_bitmap_first(set); i != -1; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  return out;
}

int NumaOf(hwloc_topology_t topo, hwloc_obj_t obj) {
  // The first NUMA node whose CPUs cover this object; memory hangs off an ancestor.
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
       n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
    if (hwloc_bitmap_isincluded(obj->cpuset, n->cpuset)) return static_cast<int>(n->os_index);
  }
  return 0;
}

absl::StatusOr<Topology> Convert(hwloc_topology_t topo, std::string source) {
  Topology out;
  out.source = std::move(source);
  out.packages = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE));

  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
       n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
    NumaNode node;
    node.os_index = static_cast<int>(n->os_index);
    node.memory_bytes = n->attr != nullptr ? n->attr->numanode.local_memory : 0;
    node.cpus = OsIndices(n->cpuset);
    out.numa_nodes.push_back(std::move(node));
  }
  std::sort(out.numa_nodes.begin(), out.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });

  // Cores; a PU without a Core parent (rare virtual machines) is a core of its own.
  int core_count = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  if (core_count > 0) {
    for (hwloc_obj_t c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, nullptr); c != nullptr;
         c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, c)) {
      Core core;
      core.index = static_cast<int>(c->logical_index);
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, c);
      core.package = pkg != nullptr ? static_cast<int>(pkg->logical_index) : 0;
      core.numa_node = NumaOf(topo, c);
      for (hwloc_obj_t pu =
               hwloc_get_next_obj_inside_cpuset_by_type(topo, c->cpuset, HWLOC_OBJ_PU, nullptr);
           pu != nullptr;
           pu = hwloc_get_next_obj_inside_cpuset_by_type(topo, c->cpuset, HWLOC_OBJ_PU, pu)) {
        core.cpus.push_back(static_cast<int>(pu->os_index));
      }
      core.threads_total = static_cast<int>(core.cpus.size());
      out.cores.push_back(std::move(core));
    }
  } else {
    for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, nullptr); pu != nullptr;
         pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu)) {
      Core core;
      core.index = static_cast<int>(pu->logical_index);
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
      core.package = pkg != nullptr ? static_cast<int>(pkg->logical_index) : 0;
      core.numa_node = NumaOf(topo, pu);
      core.cpus.push_back(static_cast<int>(pu->os_index));
      core.threads_total = 1;
      out.cores.push_back(std::move(core));
    }
  }
  if (out.cores.empty()) return absl::InternalError("hwloc found no CPUs");

  // Caches, data and unified only for the levels the planner may care about.
  for (int depth = 0; depth < hwloc_topology_get_depth(topo); ++depth) {
    hwloc_obj_type_t type = hwloc_get_depth_type(topo, depth);
    if (!hwloc_obj_type_is_cache(type)) continue;
    for (hwloc_obj_t c = hwloc_get_next_obj_by_depth(topo, depth, nullptr); c != nullptr;
         c = hwloc_get_next_obj_by_depth(topo, depth, c)) {
      Cache cache;
      cache.level = static_cast<int>(c->attr->cache.depth);
      switch (c->attr->cache.type) {
        case HWLOC_OBJ_CACHE_DATA:
          cache.type = "data";
          break;
        case HWLOC_OBJ_CACHE_INSTRUCTION:
          cache.type = "instruction";
          break;
        default:
          cache.type = "unified";
          break;
      }
      cache.size_bytes = c->attr->cache.size;
      cache.line_bytes = static_cast<int>(c->attr->cache.linesize);
      cache.cpus = OsIndices(c->cpuset);
      out.caches.push_back(std::move(cache));
    }
  }

  // NUMA distances: measured ones when the platform gives them, else 10/20.
  size_t n = out.numa_nodes.size();
  out.distances.assign(n, std::vector<uint64_t>(n, 20));
  for (size_t i = 0; i < n; ++i) out.distances[i][i] = 10;
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
      nr == 1 && dist != nullptr) {
    for (unsigned i = 0; i < dist->nbobjs; ++i) {
      for (unsigned j = 0; j < dist->nbobjs; ++j) {
        int a = out.NumaIndex(static_cast<int>(dist->objs[i]->os_index));
        int b = out.NumaIndex(static_cast<int>(dist->objs[j]->os_index));
        if (a >= 0 && b >= 0) out.distances[a][b] = dist->values[i * dist->nbobjs + j];
      }
    }
    out.distances_measured = true;
    hwloc_distances_release(topo, dist);
  }
  return out;
}

absl::StatusOr<TopologyPtr> NewTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return absl::InternalError("hwloc_topology_init failed");
  TopologyPtr topo(raw);
  // See every CPU of the machine, not only this process's affinity: the agent plans
  // for another container and restricts to its cpuset itself.
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  return topo;
}

}  // namespace

std::vector<int> Topology::Cpus() const {
  std::vector<int> out;
  for (const Core& c : cores) out.insert(out.end(), c.cpus.begin(), c.cpus.end());
  std::sort(out.begin(), out.end());
  return out;
}

int Topology::NumaIndex(int os_index) const {
  for (size_t i = 0; i < numa_nodes.size(); ++i) {
    if (numa_nodes[i].os_index == os_index) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<Topology> LoadHostTopology() {
  absl::StatusOr<TopologyPtr> topo = NewTopology();
  if (!topo.ok()) return topo.status();
  if (hwloc_topology_load(topo->get()) != 0) {
    return absl::UnavailableError("hwloc could not read this machine's topology");
  }
  return Convert(topo->get(), "this machine");
}

absl::StatusOr<Topology> LoadSyntheticTopology(absl::string_view description) {
  absl::StatusOr<TopologyPtr> topo = NewTopology();
  if (!topo.ok()) return topo.status();
  std::string desc(description);
  if (hwloc_topology_set_synthetic(topo->get(), desc.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hwloc rejected the synthetic topology \"", desc, "\""));
  }
  if (hwloc_topology_load(topo->get()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("hwloc could not load \"", desc, "\""));
  }
  return Convert(topo->get(), absl::StrCat("synthetic: ", desc));
}

Topology RestrictTopology(const Topology& topology, const std::vector<int>& allowed_cpus) {
  if (allowed_cpus.empty()) return topology;
  Topology out = topology;
  out.cores.clear();
  for (const Core& c : topology.cores) {
    Core kept = c;
    kept.cpus.clear();
    for (int cpu : c.cpus) {
      if (std::binary_search(allowed_cpus.begin(), allowed_cpus.end(), cpu)) {
        kept.cpus.push_back(cpu);
      }
    }
    if (!kept.cpus.empty()) out.cores.push_back(std::move(kept));
  }
  for (NumaNode& n : out.numa_nodes) n.cpus = IntersectSorted(n.cpus, allowed_cpus);
  std::vector<Cache> caches;
  for (Cache& c : out.caches) {
    c.cpus = IntersectSorted(c.cpus, allowed_cpus);
    if (!c.cpus.empty()) caches.push_back(std::move(c));
  }
  out.caches = std::move(caches);
  return out;
}

}  // namespace booster::agent
