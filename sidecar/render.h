// Text and JSON renderings of the topology, limits and plan, for `booster-agent
// topology` and `booster-agent plan` and for the Applied report. Pure.
#ifndef BOOSTER_SIDECAR_RENDER_H_
#define BOOSTER_SIDECAR_RENDER_H_

#include <string>

#include "sidecar/cgroup.h"
#include "sidecar/json_writer.h"
#include "sidecar/planner.h"
#include "sidecar/topology.h"

namespace booster::agent {

void WriteTopologyJson(const Topology& t, const Limits& limits, JsonWriter* w);
void WritePlanJson(const Plan& plan, JsonWriter* w);
std::string TopologyText(const Topology& t, const Limits& limits);
std::string PlanText(const Plan& plan);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_RENDER_H_
