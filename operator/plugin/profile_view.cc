#include "operator/plugin/profile_view.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/plugin/table.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::plugin {
namespace {

using rollout::Phase;

std::string Str(const Json& j, const char* pointer) {
  const Json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const Json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

int64_t Int(const Json& j, const char* pointer, int64_t fallback) {
  const Json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return fallback;
  const Json& v = j.at(p);
  return v.is_number() ? v.get<int64_t>() : fallback;
}

rollout::RolloutStatus StatusOf(const Json& profile) {
  const Json::json_pointer p("/status");
  if (!profile.is_object() || !profile.contains(p) || !profile.at(p).is_object()) return {};
  return rollout::ParseStatus(profile.at(p));
}

bool HasStatus(const Json& profile) { return !Str(profile, "/status/phase").empty(); }

std::vector<int> Steps(const Json& profile) {
  const Json::json_pointer p("/spec/rollout/steps");
  if (!profile.contains(p) || !profile.at(p).is_array()) return {10, 50, 100};  // the default
  std::vector<int> steps;
  for (const Json& s : profile.at(p)) {
    if (s.is_number()) steps.push_back(s.get<int>());
  }
  return steps;
}

std::string PhaseText(const Json& profile) {
  return HasStatus(profile) ? Str(profile, "/status/phase") : "-";
}

std::string StepText(const Json& profile, const rollout::RolloutStatus& s) {
  return absl::StrCat(s.current_step, "/", Steps(profile).size());
}

absl::Time TimeAt(const Json& j, const char* pointer) {
  return rollout::ParseTimeOr(Str(j, pointer), absl::InfinitePast());
}

}  // namespace

std::vector<std::string> GetHeader(bool all_namespaces, bool wide) {
  std::vector<std::string> h;
  if (all_namespaces) h.push_back("NAMESPACE");
  for (const char* c : {"NAME", "TARGET", "PHASE", "STEP", "WEIGHT", "VERDICT", "AGE"}) {
    h.push_back(c);
  }
  if (wide) {
    h.push_back("CANARY");
    h.push_back("REASON");
  }
  return h;
}

std::vector<std::string> GetRow(const Json& profile, absl::Time now, bool all_namespaces,
                                bool wide) {
  const rollout::RolloutStatus s = StatusOf(profile);
  std::vector<std::string> row;
  if (all_namespaces) row.push_back(Str(profile, "/metadata/namespace"));
  row.push_back(Str(profile, "/metadata/name"));
  std::string target = Str(profile, "/spec/targetRef/name");
  row.push_back(target.empty() ? "-" : target);
  row.push_back(PhaseText(profile));
  row.push_back(StepText(profile, s));
  row.push_back(absl::StrCat(s.canary_weight, "%"));
  row.push_back(s.last_decision ? s.last_decision->verdict : "-");
  absl::Time created = TimeAt(profile, "/metadata/creationTimestamp");
  row.push_back(created == absl::InfinitePast() ? "-" : HumanDuration(now - created));
  if (wide) {
    row.push_back(absl::StrCat(s.canary_replicas, "/", s.total_replicas));
    row.push_back(s.last_transition ? s.last_transition->reason : "-");
  }
  return row;
}

std::string VerdictOfReason(const std::string& reason) {
  if (reason == "StepPassed") return "Pass";
  if (reason == "AnalysisFailed") return "Fail";
  if (reason == "StepExtended" || reason == "AnalysisInconclusive" ||
      reason == "InconclusiveAccepted") {
    return "Inconclusive";
  }
  return "";
}

int StepOfMessage(const std::string& message) {
  size_t at = 0;
  while ((at = message.find("step ", at)) != std::string::npos) {
    const bool word_start = at == 0 || !std::isalpha(static_cast<unsigned char>(message[at - 1]));
    at += 5;
    size_t end = at;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    int step = 0;
    if (word_start && end > at && absl::SimpleAtoi(message.substr(at, end - at), &step)) {
      return step;
    }
  }
  return 0;
}

std::vector<HistoryEntry> BuildHistory(const Json& profile, const Json& events) {
  const std::string uid = Str(profile, "/metadata/uid");
  const std::string name = Str(profile, "/metadata/name");
  std::vector<std::pair<std::string, HistoryEntry>> sorted;  // (event name, entry)
  if (!events.is_array()) return {};
  for (const Json& e : events) {
    if (Str(e, "/involvedObject/kind") != rollout::kKind) continue;
    if (Str(e, "/involvedObject/name") != name) continue;
    if (!uid.empty() && Str(e, "/involvedObject/uid") != uid) continue;
    HistoryEntry h;
    h.time = TimeAt(e, "/firstTimestamp");
    if (h.time == absl::InfinitePast()) h.time = TimeAt(e, "/eventTime");
    if (h.time == absl::InfinitePast()) h.time = TimeAt(e, "/metadata/creationTimestamp");
    h.last = TimeAt(e, "/lastTimestamp");
    h.count = static_cast<int>(std::max<int64_t>(1, Int(e, "/count", 1)));
    h.type = Str(e, "/type");
    h.reason = Str(e, "/reason");
    h.message = Str(e, "/message");
    h.step = StepOfMessage(h.message);
    h.verdict = VerdictOfReason(h.reason);
    h.key = absl::StrCat(Str(e, "/metadata/name"), "#", h.count);
    sorted.emplace_back(Str(e, "/metadata/name"), std::move(h));
  }
  // Events carry whole seconds; within one second the recorder's names (the object's
  // name, then its clock in nanoseconds as hex) keep the order they were written in.
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.time, a.first) < std::tie(b.second.time, b.first);
  });
  std::vector<HistoryEntry> out;
  for (auto& [event_name, h] : sorted) out.push_back(std::move(h));
  return out;
}

namespace {

std::string HistoryColumns(std::string time, std::string step, std::string verdict,
                           std::string reason, const std::string& message) {
  auto pad = [](std::string cell, size_t width) {
    if (cell.size() < width) cell.append(width - cell.size(), ' ');
    return cell + "   ";
  };
  std::string line = absl::StrCat(pad(std::move(time), 20), pad(std::move(step), 4),
                                  pad(std::move(verdict), 12), pad(std::move(reason), 22), message);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

}  // namespace

std::string HistoryHeader() {
  return HistoryColumns("TIME", "STEP", "VERDICT", "REASON", "MESSAGE");
}

std::string HistoryLine(const HistoryEntry& entry) {
  std::string reason = entry.reason;
  if (entry.count > 1) absl::StrAppend(&reason, " (x", entry.count, ")");
  return HistoryColumns(TimeText(entry.time), entry.step > 0 ? absl::StrCat(entry.step) : "-",
                        entry.verdict.empty() ? "-" : entry.verdict, std::move(reason),
                        entry.message);
}

bool RolloutEnded(const Json& profile) {
  const std::string phase = Str(profile, "/status/phase");
  return phase == "Promoted" || phase == "RolledBack" || phase == "Failed";
}

std::string RenderStatus(const Json& profile, const std::vector<HistoryEntry>& history,
                         absl::Time now) {
  const rollout::RolloutStatus s = StatusOf(profile);
  const std::vector<int> steps = Steps(profile);
  std::vector<std::vector<std::string>> block;
  auto add = [&](const char* key, std::string value) { block.push_back({key, std::move(value)}); };
  add("Name:", Str(profile, "/metadata/name"));
  add("Namespace:", Str(profile, "/metadata/namespace"));
  add("Target:", absl::StrCat("Deployment ", Str(profile, "/spec/targetRef/name")));
  if (!HasStatus(profile)) {
    add("Phase:", "- (the operator has not written a status yet: is it running?)");
  } else {
    std::string phase = std::string(rollout::PhaseName(s.phase));
    if (s.phase_start_time != absl::InfinitePast()) {
      absl::StrAppend(&phase, " for ", HumanDuration(now - s.phase_start_time), " (since ",
                      TimeText(s.phase_start_time), ")");
    }
    add("Phase:", phase);
    std::string step = absl::StrCat(s.current_step, " of ", steps.size(), ", ", s.canary_weight,
                                    "% on the canary (steps ", absl::StrJoin(steps, ", "), ")");
    add("Step:", step);
    const std::string canary_name = s.canary_name.empty() ? "" : absl::StrCat(" ", s.canary_name);
    if (s.baseline_replicas > 0) {
      // A fresh baseline may hold the one pod beyond the app's total: no sum to show.
      add("Replicas:", absl::StrCat(s.total_replicas, " (the app's total); ", s.stable_replicas,
                                    " on the target, ", s.canary_replicas, " on the canary",
                                    canary_name, ", ", s.baseline_replicas,
                                    " on the fresh baseline", canary_name,
                                    canary_name.empty() ? "" : "-baseline"));
    } else {
      add("Replicas:", absl::StrCat(s.total_replicas, " = ", s.stable_replicas, " on the target + ",
                                    s.canary_replicas, " on the canary", canary_name));
    }
  }
  const std::string mode = Str(profile, "/spec/rollout/analysis/mode");
  const std::string duration = Str(profile, "/spec/rollout/stepDuration");
  // With a template, the mode may be the template's (the operator merges it): the template
  // is named instead of a default mode.
  std::string analysis = absl::StrCat("mode ", mode.empty() ? "Metrics" : mode);
  const std::string template_name = Str(profile, "/spec/rollout/analysis/templateRef/name");
  if (!template_name.empty()) {
    std::string kind = Str(profile, "/spec/rollout/analysis/templateRef/kind");
    if (kind.empty()) kind = "BoosterAnalysisTemplate";
    const int64_t generation = Int(profile, "/status/analysisTemplate/generation", 0);
    analysis = absl::StrCat(
        kind, " ", template_name,
        generation == 0 ? "" : absl::StrCat(" (generation ", generation, ")"),
        mode.empty() ? "" : absl::StrCat(", mode ", mode));
  }
  add("Analysis:",
      absl::StrCat(analysis, ", stepDuration ", duration.empty() ? "2m" : duration));
  const Json::json_pointer paused("/spec/rollout/paused");
  if (profile.contains(paused) && profile.at(paused).is_boolean() &&
      profile.at(paused).get<bool>()) {
    add("Paused by:", "spec.rollout.paused: true");
  }
  if (Str(profile, "/metadata/annotations/booster.dev~1paused") == "true") {
    add("Paused by:", absl::StrCat("annotation ", rollout::kAnnotationPaused, "=true"));
  }
  if (s.last_transition) {
    add("Last transition:",
        absl::StrCat(s.last_transition->from, " -> ", s.last_transition->to, " at ",
                     TimeText(s.last_transition->time), " (", s.last_transition->reason,
                     "): ", s.last_transition->message));
  }
  if (s.last_decision) {
    add("Last verdict:", absl::StrCat(s.last_decision->verdict, " at step ", s.last_decision->step,
                                      ", ", TimeText(s.last_decision->time), " (",
                                      s.last_decision->reason, "): ", s.last_decision->message));
  } else {
    add("Last verdict:", "none yet");
  }
  if (s.arms) {
    add("Arms:", absl::StrCat("step ", s.arms->step, ": baseline ", s.arms->baseline.pods,
                              " pods, ", s.arms->baseline.windows, " windows; canary ",
                              s.arms->canary.pods, " pods, ", s.arms->canary.windows, " windows"));
  }
  std::string out = RenderTable({}, block);
  if (!s.conditions.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const rollout::Condition& c : s.conditions) {
      rows.push_back({"  " + c.type, c.status, c.reason.empty() ? "-" : c.reason, c.message});
    }
    absl::StrAppend(&out, "Conditions:\n",
                    RenderTable({"  TYPE", "STATUS", "REASON", "MESSAGE"}, rows));
  }
  absl::StrAppend(&out, "History (from the profile's Events, oldest first):\n");
  if (history.empty()) {
    absl::StrAppend(&out,
                    "  no Events (the API server keeps Events for its --event-ttl, 1h by "
                    "default)\n");
  } else {
    absl::StrAppend(&out, HistoryHeader());
    for (const HistoryEntry& h : history) absl::StrAppend(&out, HistoryLine(h));
  }
  return out;
}

}  // namespace booster::plugin
