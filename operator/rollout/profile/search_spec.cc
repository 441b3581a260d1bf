// spec.search's reader (search_spec.h).
#include "operator/rollout/profile/search_spec.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "operator/rollout/profile/json_fields.h"
#include "operator/rollout/profile/metric_names.h"
#include "operator/rollout/profile/spec_fields.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {
namespace {

constexpr char kSysctlPrefix[] = "/sysctls/";

// RFC 6901: "~" is "~0" and "/" is "~1" inside a pointer's token.
std::string PointerToken(const std::string& s) {
  return absl::StrReplaceAll(s, {{"~", "~0"}, {"/", "~1"}});
}

}  // namespace

std::string SearchKnobName(const std::string& path) {
  if (path.rfind(kSysctlPrefix, 0) == 0) {
    return absl::StrCat("sysctl ", absl::StrReplaceAll(path.substr(sizeof(kSysctlPrefix) - 1),
                                                       {{"~1", "/"}, {"~0", "~"}}));
  }
  std::string name = path.empty() ? path : path.substr(1);
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

namespace profile_internal {

void ParseSearch(const Json& j, const Tuning& tuning, const AnalysisSpec& analysis,
                 SearchSpec& out, SpecErrors& errors) {
  const std::string p = "spec.search";
  if (!CheckObject(j, p, {"knobs", "objective", "minImprovementPercent", "maxTrials"}, errors)) {
    return;
  }
  if (std::optional<size_t> m = GetEnum(j, "objective", p, kMetricNames, errors)) {
    out.objective = std::string(kMetricNames[*m]);
  } else if (Field(j, "objective") == nullptr) {
    errors.Add(FieldPath(p, "objective"),
               "is required: the metric the search improves, e.g. cpuPerRequest or latencyP99");
  }
  if (auto v = GetNumber(j, "minImprovementPercent", p, 0.1, 1000, errors)) {
    out.min_improvement_percent = *v;
  }
  if (auto v = GetInt(j, "maxTrials", p, 1, 50, errors)) out.max_trials = static_cast<int>(*v);
  if (analysis.mode != AnalysisMode::kMetrics) {
    errors.Add(p, "needs spec.rollout.analysis.mode Metrics: a trial is kept only when the "
                  "judge shows the objective better");
  }
  if (analysis.dry_run) {
    errors.Add(p, "cannot run with spec.rollout.analysis.dryRun: a dry run never rolls a "
                  "trial back, so every trial would be kept");
  }

  const std::string kp = FieldPath(p, "knobs");
  const Json* knobs = Field(j, "knobs");
  if (knobs == nullptr) {
    errors.Add(kp, "is required: at least one knob with its candidate values, e.g. "
                   "[{knob: runtime.go.gogc, values: [200, 400]}]");
    return;
  }
  if (!knobs->is_array() || knobs->empty() || knobs->size() > 16) {
    errors.Add(kp, "must be a list of 1 to 16 knobs");
    return;
  }
  const Json base = TuningToJson(tuning);
  std::set<std::string> seen;
  for (size_t i = 0; i < knobs->size(); ++i) {
    const Json& e = (*knobs)[i];
    const std::string ep = absl::StrCat(kp, "[", i, "]");
    if (!CheckObject(e, ep, {"knob", "sysctl", "values"}, errors)) continue;
    SearchKnob knob;
    const Json* by_knob = Field(e, "knob");
    const Json* by_sysctl = Field(e, "sysctl");
    if ((by_knob == nullptr) == (by_sysctl == nullptr)) {
      errors.Add(ep, "needs exactly one of knob (e.g. runtime.go.gogc) or sysctl (e.g. "
                     "net.core.somaxconn)");
      continue;
    }
    if (by_knob != nullptr) {
      std::optional<size_t> k = GetEnum(e, "knob", ep, kSearchKnobs, errors);
      if (!k) continue;
      knob.knob = std::string(kSearchKnobs[*k]);
      knob.path = "/" + absl::StrReplaceAll(knob.knob, {{".", "/"}});
    } else {
      std::optional<std::string> name = GetString(e, "sysctl", ep, errors);
      if (!name) continue;
      knob.knob = absl::StrCat("sysctl ", *name);
      knob.path = absl::StrCat(kSysctlPrefix, PointerToken(*name));
    }
    if (!seen.insert(knob.path).second) {
      errors.Add(ep, absl::StrCat(knob.knob, " is listed twice"));
      continue;
    }
    const Json* values = Field(e, "values");
    const std::string vp = FieldPath(ep, "values");
    if (values == nullptr || !values->is_array() || values->empty() || values->size() > 16) {
      errors.Add(vp, "must be a list of 1 to 16 candidate values");
      continue;
    }
    std::set<std::string> seen_values;
    for (size_t v = 0; v < values->size(); ++v) {
      const std::string at = absl::StrCat(vp, "[", v, "]");
      Json candidate = base;
      candidate[Json::json_pointer(knob.path)] = (*values)[v];
      absl::StatusOr<Tuning> t = TuningFromJson(candidate);
      if (!t.ok()) {
        errors.Add(at, absl::StrCat((*values)[v].dump(), " makes no valid tuning: ",
                                    t.status().message()));
        continue;
      }
      if (t->go.gogc == "off" && t->go.gomemlimit.empty()) {
        errors.Add(at, "GOGC off without a GOMEMLIMIT lets the heap grow until the container "
                       "is OOM-killed; set spec.tuning.runtime.go.gomemlimit (e.g. auto)");
        continue;
      }
      const Json canonical = TuningToJson(*t).at(Json::json_pointer(knob.path));
      if (!seen_values.insert(canonical.dump()).second) {
        errors.Add(at, absl::StrCat((*values)[v].dump(), " is listed twice"));
        continue;
      }
      knob.values.push_back(canonical);
    }
    out.knobs.push_back(std::move(knob));
  }
}

}  // namespace profile_internal
}  // namespace booster::rollout
