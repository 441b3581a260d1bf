// Shared analysis templates: the reference, the merge and the resolution
// (analysis_template.h).
#include "operator/rollout/profile/analysis_template.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/json_fields.h"

namespace booster::rollout {
namespace {

using profile_internal::Field;
using profile_internal::IntAt;
using profile_internal::TypeName;

// The object at `pointer` ("/spec/rollout/analysis"); null when absent or not an object.
const Json* ObjectAt(const Json& j, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return nullptr;
  const Json& v = j.at(p);
  return v.is_object() ? &v : nullptr;
}

constexpr char kProfileAnalysis[] = "/spec/rollout/analysis";

std::string Describe(const AnalysisTemplateRef& ref, const std::string& ns) {
  return ref.kind == kClusterAnalysisTemplateKind
             ? absl::StrCat(ref.kind, " \"", ref.name, "\"")
             : absl::StrCat(ref.kind, " \"", ref.name, "\" in namespace \"", ns, "\"");
}

}  // namespace

absl::StatusOr<std::optional<AnalysisTemplateRef>> AnalysisTemplateRefOf(const Json& profile) {
  const Json* analysis = ObjectAt(profile, kProfileAnalysis);
  if (analysis == nullptr) return std::nullopt;
  const Json* ref = Field(*analysis, "templateRef");
  if (ref == nullptr) return std::nullopt;
  const std::string p = "spec.rollout.analysis.templateRef";
  if (!ref->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(p, ": must be an object {kind, name}, got ", TypeName(*ref)));
  }
  AnalysisTemplateRef out{std::string(kAnalysisTemplateKind), ""};
  if (const Json* k = Field(*ref, "kind")) {
    const std::string kind = k->is_string() ? k->get<std::string>() : "";
    if (kind != kAnalysisTemplateKind && kind != kClusterAnalysisTemplateKind) {
      return absl::InvalidArgumentError(absl::StrCat(p, ".kind: must be ", kAnalysisTemplateKind,
                                                     " or ", kClusterAnalysisTemplateKind,
                                                     ", got ", k->dump()));
    }
    out.kind = kind;
  }
  const Json* n = Field(*ref, "name");
  if (n == nullptr || !n->is_string() || n->get<std::string>().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(p, ".name: the template's name is required"));
  }
  out.name = n->get<std::string>();
  return out;
}

absl::StatusOr<Json> MergeAnalysis(const Json& from_template, const Json& from_profile) {
  if (!from_template.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.analysis: must be an object, got ", TypeName(from_template)));
  }
  if (from_template.contains("templateRef")) {
    return absl::InvalidArgumentError(
        "spec.analysis.templateRef: a template cannot name another template");
  }
  Json out = from_template;
  if (!from_profile.is_object()) return out;
  for (auto it = from_profile.begin(); it != from_profile.end(); ++it) {
    const std::string& key = it.key();
    const Json& mine = it.value();
    if (key == "templateRef") continue;
    if (key == "source" && mine.is_object() && out.contains("source") &&
        out["source"].is_object()) {
      for (auto s = mine.begin(); s != mine.end(); ++s) out["source"][s.key()] = s.value();
      continue;
    }
    if (key == "metrics" && mine.is_array() && out.contains("metrics") &&
        out["metrics"].is_array()) {
      Json& metrics = out["metrics"];
      for (const Json& m : mine) {
        const Json* name = m.is_object() ? Field(m, "name") : nullptr;
        Json* same = nullptr;
        for (Json& t : metrics) {
          if (name != nullptr && t.is_object() && t.contains("name") && t["name"] == *name) {
            same = &t;
            break;
          }
        }
        if (same == nullptr) {
          metrics.push_back(m);
        } else {
          for (auto f = m.begin(); f != m.end(); ++f) (*same)[f.key()] = f.value();
        }
      }
      continue;
    }
    out[key] = mine;
  }
  return out;
}

ResolvedProfile ResolveAnalysisTemplate(const Json& profile,
                                        const AnalysisTemplateLookup& lookup) {
  ResolvedProfile r;
  absl::StatusOr<std::optional<AnalysisTemplateRef>> ref = AnalysisTemplateRefOf(profile);
  if (!ref.ok()) {
    r.error = ref.status();
    return r;
  }
  if (!ref->has_value()) return r;
  const AnalysisTemplateRef& want = **ref;
  const Json* meta = Field(profile, "metadata");
  const std::string ns = meta != nullptr ? profile_internal::StringAt(*meta, "namespace") : "";
  std::shared_ptr<const Json> found = lookup ? lookup(want, ns) : nullptr;
  const std::string where = Describe(want, ns);
  if (found == nullptr) {
    r.error = absl::InvalidArgumentError(absl::StrCat(
        "spec.rollout.analysis.templateRef: ", where,
        " not found; create it, or name an existing one (kubectl get ",
        want.kind == kClusterAnalysisTemplateKind ? "boosterclusteranalysistemplates"
                                                  : "boosteranalysistemplates -n " + ns,
        ")"));
    return r;
  }
  const Json* analysis = ObjectAt(*found, "/spec/analysis");
  if (analysis == nullptr || analysis->empty()) {
    r.error = absl::InvalidArgumentError(absl::StrCat("spec.rollout.analysis.templateRef: ",
                                                      where, " has an empty spec.analysis"));
    return r;
  }
  absl::StatusOr<Json> merged = MergeAnalysis(*analysis, *ObjectAt(profile, kProfileAnalysis));
  if (!merged.ok()) {
    r.error = absl::InvalidArgumentError(absl::StrCat("spec.rollout.analysis.templateRef: ",
                                                      where, ": ", merged.status().message()));
    return r;
  }
  r.merged = profile;
  (*r.merged)["spec"]["rollout"]["analysis"] = *std::move(merged);
  const Json* tmeta = Field(*found, "metadata");
  r.used = AnalysisTemplateStatus{want.kind, want.name, tmeta ? IntAt(*tmeta, "generation") : 0};
  return r;
}

}  // namespace booster::rollout
