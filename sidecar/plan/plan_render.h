// Text and JSON renderings of the topology, limits and plan, for `booster-agent
// topology` and `booster-agent plan` and for the Applied report. Pure. The JSON keeps its
// keys in the order written (base/json_line.h).
//
//   std::printf("%s\n", JsonLine(PlanJson(plan)).c_str());
#ifndef BOOSTER_SIDECAR_PLAN_PLAN_RENDER_H_
#define BOOSTER_SIDECAR_PLAN_PLAN_RENDER_H_

#include <string>

#include "nlohmann/json.hpp"
#include "sidecar/plan/planner.h"
#include "sidecar/topology/cgroup.h"
#include "sidecar/topology/topology.h"

namespace booster::agent {

nlohmann::ordered_json TopologyJson(const Topology& t, const Limits& limits);
nlohmann::ordered_json PlanJson(const Plan& plan);
std::string TopologyText(const Topology& t, const Limits& limits);
std::string PlanText(const Plan& plan);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_PLAN_PLAN_RENDER_H_
