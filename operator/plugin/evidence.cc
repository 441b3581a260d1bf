#include "operator/plugin/evidence.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "operator/plugin/table.h"
#include "operator/rollout/profile/search_spec.h"
#include "operator/rollout/profile/status_codec.h"

namespace booster::plugin {
namespace {

using Json = nlohmann::json;

constexpr const char* kMetricFields[] = {".baseline", ".canary", ".changePercent", ".pValue",
                                         ".verdict"};

std::string Str(const Json& j, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

// "n=12 median=0.0123" -> ("12", "0.0123").
void ParseArm(const std::string& text, std::string* windows, std::string* median) {
  for (absl::string_view part : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&part, "n=")) *windows = std::string(part);
    if (absl::ConsumePrefix(&part, "median=")) *median = std::string(part);
  }
}

std::string Change(const std::string& text) {
  if (text.empty() || text == "-") return "-";
  double v;
  if (text[0] != '-' && text[0] != '+' && absl::SimpleAtod(text, &v) && v > 0) {
    return absl::StrCat("+", text, "%");
  }
  return text + "%";
}

// The metric a key is about ("latencyP99" of "latencyP99.pValue"), or "".
std::string MetricOf(const std::string& key) {
  for (const char* field : kMetricFields) {
    if (absl::EndsWith(key, field) && key.size() > std::string(field).size()) {
      return key.substr(0, key.size() - std::string(field).size());
    }
  }
  return "";
}

}  // namespace

std::vector<MetricEvidence> MetricRows(const std::map<std::string, std::string>& evidence,
                                       const std::vector<std::string>& order) {
  std::set<std::string> metrics;
  for (const auto& [key, value] : evidence) {
    std::string m = MetricOf(key);
    if (!m.empty()) metrics.insert(m);
  }
  std::vector<std::string> names;
  for (const std::string& m : order) {
    if (metrics.erase(m) > 0) names.push_back(m);
  }
  names.insert(names.end(), metrics.begin(), metrics.end());

  std::vector<MetricEvidence> rows;
  for (const std::string& m : names) {
    auto get = [&](const char* field) {
      auto it = evidence.find(m + field);
      return it == evidence.end() ? std::string() : it->second;
    };
    MetricEvidence row;
    row.metric = m;
    ParseArm(get(".baseline"), &row.baseline_windows, &row.baseline_median);
    ParseArm(get(".canary"), &row.canary_windows, &row.canary_median);
    row.change = Change(get(".changePercent"));
    if (!get(".pValue").empty()) row.p_value = get(".pValue");
    if (!get(".verdict").empty()) row.verdict = get(".verdict");
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// "31.2% better", "210% worse", "-" for none.
std::string ObjectiveCell(const Json& v, const char* suffix = "") {
  if (!v.is_number()) return "-";
  const double x = v.get<double>();
  if (x == 0) return absl::StrCat("unchanged", suffix);
  return absl::StrCat(std::round(std::fabs(x) * 10) / 10, "% ", x > 0 ? "better" : "worse",
                      suffix);
}

std::string ChangeCell(const Json& t) {
  const Json value = t.value("value", Json());
  return absl::StrCat(rollout::SearchKnobName(t.value("knob", "")), " = ",
                      value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace

std::string RenderSearch(const Json& search) {
  if (!search.is_object()) return "";
  const std::string phase = search.value("phase", "");
  std::string head = absl::StrCat("Search: ", phase.empty() ? "-" : phase);
  if (!search.value("reason", "").empty()) absl::StrAppend(&head, " (", search.value("reason", ""), ")");
  if (!search.value("message", "").empty()) absl::StrAppend(&head, ": ", search.value("message", ""));
  std::string out = head + "\n";
  const Json trials = search.value("trials", Json::array());
  std::string best = "the profile's own tuning";
  for (const Json& t : trials) {
    if (t.is_object() && t.value("result", "") == "Kept") {
      best = absl::StrCat(ChangeCell(t), " (trial ", t.value("number", 0), ")");
    }
  }
  absl::StrAppend(&out, "Objective: ", search.value("objective", "-"), "; best so far: ", best,
                  "\n");
  if (phase == "Base") {
    absl::StrAppend(&out, "The profile's own tuning goes out first; the trials start from it.\n");
  }
  const Json skipped = search.value("skipped", Json::array());
  if (skipped.is_array()) {
    for (const Json& s : skipped) {
      if (!s.is_object()) continue;
      absl::StrAppend(&out, "Not tried: ", ChangeCell(s), ": ", s.value("reason", Json("")).is_string()
                                                                 ? s.value("reason", "")
                                                                 : std::string(),
                      "\n");
    }
  }
  if (!trials.is_array() || trials.empty()) return out;
  std::vector<std::vector<std::string>> rows;
  for (const Json& t : trials) {
    if (!t.is_object()) continue;
    const bool running = !t.contains("result");
    rows.push_back({absl::StrCat(t.value("number", 0)), ChangeCell(t),
                    running ? "Running" : t.value("result", "-"),
                    running ? t.value("rollbackReason", "-") : t.value("reason", "-"),
                    running ? ObjectiveCell(t.value("objectiveSoFarPercent", Json()), " so far")
                            : ObjectiveCell(t.value("objectiveImprovementPercent", Json())),
                    t.value("started", "-")});
  }
  absl::StrAppend(&out, "\n",
                  RenderTable({"TRIAL", "CHANGE", "RESULT", "REASON", "OBJECTIVE", "STARTED"},
                              rows));
  return out;
}

std::string RenderExplain(const Json& profile) {
  const std::string name = Str(profile, "/metadata/name");
  const std::string ns = Str(profile, "/metadata/namespace");
  rollout::RolloutStatus status;
  if (profile.contains("status") && profile["status"].is_object()) {
    status = rollout::ParseStatus(profile["status"]);
  }
  std::string phase = Str(profile, "/status/phase");
  std::string out = absl::StrCat("boosterprofile \"", name, "\" in namespace \"", ns,
                                 "\": ", phase.empty() ? "no status yet" : phase, ", step ",
                                 status.current_step, "\n");
  const Json::json_pointer dry_run("/spec/rollout/analysis/dryRun");
  if (profile.contains(dry_run) && profile.at(dry_run) == true) {
    absl::StrAppend(&out,
                    "Dry run (spec.rollout.analysis.dryRun): verdicts are reported, but a Fail "
                    "or an Inconclusive that would roll back does not; the step runs to its end "
                    "and advances.\n");
  }
  if (profile.contains("status") && profile["status"].is_object() &&
      profile["status"].contains("search")) {
    absl::StrAppend(&out, RenderSearch(profile["status"]["search"]), "\n");
  }
  if (!status.last_decision) {
    absl::StrAppend(&out, "No verdict yet: the first step has not been judged.\n");
    return out;
  }
  const rollout::Decision& d = *status.last_decision;
  std::vector<std::vector<std::string>> block = {
      {"Verdict:", absl::StrCat(d.verdict, " at step ", d.step, ", ", TimeText(d.time))},
      {"Reason:", d.reason.empty() ? "-" : d.reason},
      {"Message:", d.message.empty() ? "-" : d.message},
  };
  if (d.dry_run) {
    block.push_back({"Dry run:", absl::StrCat("without dryRun this ", d.verdict,
                                              " would have rolled the rollout back at step ",
                                              d.step, "; it went on instead")});
  }
  auto ev = [&](const char* key) {
    auto it = d.evidence.find(key);
    return it == d.evidence.end() ? std::string() : it->second;
  };
  const std::string judge = ev("judge");
  if (judge == "metrics") {
    std::string line = "metrics (canary against baseline, paired by interval, pods as units)";
    if (!ev("look").empty()) absl::StrAppend(&line, ", look ", ev("look"));
    if (!ev("alpha").empty()) absl::StrAppend(&line, ", alpha of this look ", ev("alpha"));
    block.push_back({"Judge:", line});
  } else if (judge == "time") {
    std::string line = "time (a step passes once it has run stepDuration with both arms ready)";
    if (!ev("observed").empty()) {
      absl::StrAppend(&line, ": ran ", ev("observed"), " of ", ev("required"));
    }
    block.push_back({"Judge:", line});
  } else if (!judge.empty()) {
    block.push_back({"Judge:", judge});
  }
  for (const auto& [key, value] : d.evidence) {
    if (key == "judge" || key == "look" || key == "alpha" || !MetricOf(key).empty()) continue;
    if (judge == "time" && (key == "observed" || key == "required")) continue;
    block.push_back({absl::StrCat(key, ":"), value});
  }
  absl::StrAppend(&out, RenderTable({}, block));

  std::vector<std::string> order;
  const Json::json_pointer metrics("/spec/rollout/analysis/metrics");
  if (profile.contains(metrics) && profile.at(metrics).is_array()) {
    for (const Json& m : profile.at(metrics)) order.push_back(Str(m, "/name"));
  }
  std::vector<MetricEvidence> rows = MetricRows(d.evidence, order);
  if (rows.empty()) {
    if (judge != "metrics") {
      absl::StrAppend(
          &out, "\nNo per-metric evidence: this verdict was not the metrics judge's",
          judge == "time" ? " (mode Time, or the 100% step, which has no baseline)" : "", ".\n");
    }
    return out;
  }
  std::vector<std::vector<std::string>> table;
  for (const MetricEvidence& r : rows) {
    table.push_back({r.metric, r.baseline_windows, r.baseline_median, r.canary_windows,
                     r.canary_median, r.change, r.p_value, r.verdict});
  }
  absl::StrAppend(&out, "\n",
                  RenderTable({"METRIC", "BASELINE WINDOWS", "BASELINE MEDIAN", "CANARY WINDOWS",
                               "CANARY MEDIAN", "CHANGE", "P-VALUE", "VERDICT"},
                              table));
  return out;
}

}  // namespace booster::plugin
