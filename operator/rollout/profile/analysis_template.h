// Shared analysis templates (docs/analysis-templates.md): a BoosterAnalysisTemplate (in the
// profile's namespace) or a BoosterClusterAnalysisTemplate holds an `analysis` block; a
// profile names one in spec.rollout.analysis.templateRef and may override its fields. The
// operator judges the profile on the merged block: ResolveAnalysisTemplate gives the profile
// as if that block had been written in it, and what it used (status.analysisTemplate).
// Pure: the caller looks the template up (its informers' stores).
//
//   ResolvedProfile r = ResolveAnalysisTemplate(profile, lookup);
//   absl::StatusOr<Profile> p = ParseProfile(r.ToParse(profile));
//   if (p.ok() && !r.error.ok()) p->spec = r.error;   // the rollout holds, InvalidSpec
//
// Merging (MergeAnalysis): every field the profile sets replaces the template's; `metrics`
// are merged by name (a metric the profile names again takes the profile's fields over the
// template's, a new one is added after the template's); `source` is merged key by key.
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_ANALYSIS_TEMPLATE_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_ANALYSIS_TEMPLATE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

inline constexpr absl::string_view kAnalysisTemplateKind = "BoosterAnalysisTemplate";
inline constexpr absl::string_view kClusterAnalysisTemplateKind =
    "BoosterClusterAnalysisTemplate";

// spec.rollout.analysis.templateRef; kind defaults to the namespaced template.
struct AnalysisTemplateRef {
  std::string kind;
  std::string name;
};

// The profile's templateRef: nullopt without one, an error a user can act on when malformed.
absl::StatusOr<std::optional<AnalysisTemplateRef>> AnalysisTemplateRefOf(const Json& profile);

// The template's analysis with the profile's over it (rules above). `from_profile` may hold
// templateRef, which is dropped; a template's analysis may not name a template itself.
absl::StatusOr<Json> MergeAnalysis(const Json& from_template, const Json& from_profile);

// The template named by `ref` for a profile in namespace `ns` (a cluster template ignores
// it); null when there is none.
using AnalysisTemplateLookup = std::function<std::shared_ptr<const Json>(
    const AnalysisTemplateRef& ref, const std::string& ns)>;

struct ResolvedProfile {
  // The profile with the merged analysis block (without templateRef); nullopt when it
  // names no template or the template cannot be used: the profile itself is the one to
  // parse (no copy of it on every reconcile). ToParse() gives whichever applies.
  std::optional<Json> merged;
  // The template used: kind, name, metadata.generation. nullopt when none was.
  std::optional<AnalysisTemplateStatus> used;
  // Why the named template cannot be used (not found, no analysis block, a bad merge), with
  // the field path and what to do; OK otherwise.
  absl::Status error;

  const Json& ToParse(const Json& original) const { return merged ? *merged : original; }
};

ResolvedProfile ResolveAnalysisTemplate(const Json& profile, const AnalysisTemplateLookup& lookup);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_ANALYSIS_TEMPLATE_H_
