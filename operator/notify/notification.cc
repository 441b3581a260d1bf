#include "operator/notify/notification.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace booster::notify {
namespace {

constexpr Kind kAllKinds[] = {Kind::kStepVerdict,     Kind::kPromoted,       Kind::kRollingBack,
                              Kind::kRolledBack,      Kind::kFailed,         Kind::kConflict,
                              Kind::kKnobsNotReached, Kind::kRollbackStalled};

std::string Str(const Json& j, const char* pointer) {
  Json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_string()) return "";
  return j.at(p).get<std::string>();
}

int Int(const Json& j, const char* pointer) {
  Json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_number_integer()) return 0;
  return j.at(p).get<int>();
}

}  // namespace

absl::string_view ProviderName(Provider p) {
  switch (p) {
    case Provider::kSlack:
      return "slack";
    case Provider::kTeams:
      return "teams";
    case Provider::kWebhook:
      return "webhook";
  }
  return "webhook";
}

absl::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kStepVerdict:
      return "StepVerdict";
    case Kind::kPromoted:
      return "Promoted";
    case Kind::kRollingBack:
      return "RollingBack";
    case Kind::kRolledBack:
      return "RolledBack";
    case Kind::kFailed:
      return "Failed";
    case Kind::kConflict:
      return "Conflict";
    case Kind::kKnobsNotReached:
      return "KnobsNotReached";
    case Kind::kRollbackStalled:
      return "RollbackStalled";
  }
  return "";
}

std::optional<Kind> KindFromName(absl::string_view name) {
  for (Kind k : kAllKinds) {
    if (KindName(k) == name) return k;
  }
  return std::nullopt;
}

std::set<Kind> DefaultKinds() {
  std::set<Kind> out(std::begin(kAllKinds), std::end(kAllKinds));
  out.erase(Kind::kStepVerdict);
  return out;
}

absl::StatusOr<std::vector<Channel>> ParseChannels(const Json& notifications) {
  std::vector<Channel> out;
  if (notifications.is_null()) return out;
  if (!notifications.is_array()) {
    return absl::InvalidArgumentError("spec.notifications: must be a list");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < notifications.size(); ++i) {
    const Json& n = notifications[i];
    const std::string at = absl::StrCat("spec.notifications[", i, "]");
    if (!n.is_object()) return absl::InvalidArgumentError(at + ": must be an object");
    Channel c;
    const std::string provider = Str(n, "/provider");
    if (provider == "slack") {
      c.provider = Provider::kSlack;
    } else if (provider == "teams") {
      c.provider = Provider::kTeams;
    } else if (provider == "webhook") {
      c.provider = Provider::kWebhook;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".provider: \"", provider, "\" is not one of slack, teams, webhook"));
    }
    c.secret_name = Str(n, "/secretRef/name");
    if (c.secret_name.empty()) {
      return absl::InvalidArgumentError(
          at +
          ".secretRef.name: required, the Secret (in the profile's namespace) whose key "
          "holds the webhook URL");
    }
    if (std::string key = Str(n, "/secretRef/key"); !key.empty()) c.secret_key = key;
    // The CRD's default; unique per provider (its list-map keys).
    c.name = Str(n, "/name");
    if (c.name.empty()) c.name = "default";
    if (!names.insert(absl::StrCat(provider, "/", c.name)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": two notifications of one provider need different names"));
    }
    if (n.contains("events")) {
      const Json& events = n["events"];
      if (!events.is_array()) return absl::InvalidArgumentError(at + ".events: must be a list");
      for (const Json& e : events) {
        std::optional<Kind> k = e.is_string() ? KindFromName(e.get<std::string>()) : std::nullopt;
        if (!k) {
          std::vector<std::string> all;
          for (Kind a : kAllKinds) all.emplace_back(KindName(a));
          return absl::InvalidArgumentError(
              absl::StrCat(at, ".events: ", e.dump(), " is not one of ", absl::StrJoin(all, ", ")));
        }
        c.kinds.insert(*k);
      }
    } else {
      c.kinds = DefaultKinds();
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Kind> KindOf(const EventFacts& e) {
  if (e.transition_to == "Promoted") return Kind::kPromoted;
  if (e.transition_to == "RollingBack") return Kind::kRollingBack;
  if (e.transition_to == "RolledBack") return Kind::kRolledBack;
  if (e.transition_to == "Failed") return Kind::kFailed;
  const std::string& r = e.reason;
  if (r == "StepPassed" || r == "StepExtended" || r == "InconclusiveAccepted" ||
      absl::StartsWith(r, "DryRunAnalysis")) {
    return Kind::kStepVerdict;
  }
  if (r == "TargetHeld" || r == "CanaryNameTaken" || r == "BaselineNameTaken" ||
      r == "ManagedElsewhere") {
    return Kind::kConflict;
  }
  if (r == "KnobsNotReached") return Kind::kKnobsNotReached;
  if (r == "RollbackStalled") return Kind::kRollbackStalled;
  return std::nullopt;
}

Message BuildMessage(const Json& profile, const EventFacts& e, Kind kind, absl::Time now) {
  Message m;
  m.kind = kind;
  m.event_type = e.type;
  m.reason = e.reason;
  m.text = e.message;
  m.ns = Str(profile, "/metadata/namespace");
  m.profile = Str(profile, "/metadata/name");
  m.target = Str(profile, "/spec/targetRef/name");
  m.phase = Str(profile, "/status/phase");
  m.step = Int(profile, "/status/currentStep");
  m.time = now;
  const bool about_decision =
      kind == Kind::kStepVerdict || kind == Kind::kRollingBack || kind == Kind::kRolledBack;
  Json::json_pointer dp("/status/lastDecision");
  if (about_decision && profile.contains(dp) && profile.at(dp).is_object()) {
    const Json& d = profile.at(dp);
    Message::Decision out;
    out.verdict = Str(d, "/verdict");
    out.reason = Str(d, "/reason");
    out.message = Str(d, "/message");
    out.step = Int(d, "/step");
    out.dry_run = d.value("dryRun", false);
    const Json ev = d.value("evidence", Json::object());
    if (ev.is_object()) {
      for (auto it = ev.begin(); it != ev.end(); ++it) {
        const std::string& key = it.key();
        if (!absl::EndsWith(key, ".verdict") || !it.value().is_string()) continue;
        const std::string metric = key.substr(0, key.size() - 8);
        std::string line = absl::StrCat(metric, ": ", it.value().get<std::string>());
        auto field = [&](const std::string& f) {
          auto v = ev.find(metric + "." + f);
          return v != ev.end() && v->is_string() ? v->get<std::string>() : std::string();
        };
        if (std::string c = field("changePercent"); !c.empty()) {
          double x = 0;
          const bool signed_number = absl::SimpleAtod(c, &x) && x > 0 && c[0] != '+';
          absl::StrAppend(&line, ", ", signed_number ? "+" : "", c, "%");
        }
        if (std::string p = field("pValue"); !p.empty()) absl::StrAppend(&line, " (p=", p, ")");
        out.metrics.push_back(std::move(line));
      }
    }
    m.decision = std::move(out);
  }
  return m;
}

namespace {

std::string Headline(const Message& m) {
  std::string what;
  switch (m.kind) {
    case Kind::kStepVerdict:
      what = absl::StrCat("step ", m.decision ? m.decision->step : m.step, ": ", m.reason);
      break;
    case Kind::kPromoted:
      what = "tuning promoted";
      break;
    case Kind::kRollingBack:
      what = absl::StrCat("rolling back (", m.reason, ")");
      break;
    case Kind::kRolledBack:
      what = "rolled back";
      break;
    case Kind::kFailed:
      what = absl::StrCat("failed (", m.reason, ")");
      break;
    case Kind::kConflict:
      what = absl::StrCat("conflict (", m.reason, ")");
      break;
    case Kind::kKnobsNotReached:
      what = "knobs not reached";
      break;
    case Kind::kRollbackStalled:
      what = "rollback stalled";
      break;
  }
  return absl::StrCat("BoosterProfile ", m.ns, "/", m.profile, " (Deployment ", m.target,
                      "): ", what);
}

std::string DecisionLine(const Message::Decision& d) {
  return absl::StrCat("last decision: ", d.verdict, d.dry_run ? " (dry run)" : "", " at step ",
                      d.step, ", ", d.reason);
}

bool Bad(const Message& m) {
  return m.event_type == "Warning" || m.kind == Kind::kRollingBack || m.kind == Kind::kRolledBack ||
         m.kind == Kind::kFailed;
}

}  // namespace

std::string RenderPayload(Provider p, const Message& m) {
  const std::string time = absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", m.time, absl::UTCTimeZone());
  switch (p) {
    case Provider::kSlack: {
      std::string text = absl::StrCat("*", Headline(m), "*\n", m.text);
      if (m.decision) {
        absl::StrAppend(&text, "\n", DecisionLine(*m.decision));
        for (const std::string& l : m.decision->metrics) absl::StrAppend(&text, "\n• ", l);
      }
      Json attachment = {{"color", Bad(m) ? "danger" : "good"},
                         {"text", text},
                         {"footer", absl::StrCat("Booster · ", m.reason)},
                         {"ts", absl::ToUnixSeconds(m.time)}};
      return Json{{"text", Headline(m)}, {"attachments", Json::array({attachment})}}.dump();
    }
    case Provider::kTeams: {
      // An Adaptive Card in a message, what a Teams "incoming webhook" workflow accepts.
      Json body = Json::array();
      body.push_back({{"type", "TextBlock"},
                      {"text", Headline(m)},
                      {"weight", "Bolder"},
                      {"color", Bad(m) ? "Attention" : "Good"},
                      {"wrap", true}});
      body.push_back({{"type", "TextBlock"}, {"text", m.text}, {"wrap", true}});
      Json facts = Json::array();
      facts.push_back({{"title", "Event"}, {"value", m.reason}});
      facts.push_back({{"title", "Phase"}, {"value", m.phase}});
      facts.push_back({{"title", "Time"}, {"value", time}});
      if (m.decision) {
        facts.push_back({{"title", "Decision"}, {"value", DecisionLine(*m.decision)}});
        for (const std::string& l : m.decision->metrics) {
          facts.push_back({{"title", "Metric"}, {"value", l}});
        }
      }
      body.push_back({{"type", "FactSet"}, {"facts", facts}});
      Json card = {{"$schema", "http://adaptivecards.io/schemas/adaptive-card.json"},
                   {"type", "AdaptiveCard"},
                   {"version", "1.4"},
                   {"body", body}};
      return Json{
          {"type", "message"},
          {"attachments", Json::array({{{"contentType", "application/vnd.microsoft.card.adaptive"},
                                        {"content", card}}})}}
          .dump();
    }
    case Provider::kWebhook: {
      Json j = {{"kind", "BoosterNotification"},
                {"apiVersion", "booster.dev/v1alpha1"},
                {"event", KindName(m.kind)},
                {"type", m.event_type},
                {"reason", m.reason},
                {"message", m.text},
                {"summary", Headline(m)},
                {"namespace", m.ns},
                {"profile", m.profile},
                {"target", m.target},
                {"phase", m.phase},
                {"step", m.step},
                {"time", time}};
      if (m.decision) {
        j["decision"] = {{"verdict", m.decision->verdict}, {"step", m.decision->step},
                         {"reason", m.decision->reason},   {"message", m.decision->message},
                         {"dryRun", m.decision->dry_run},  {"metrics", m.decision->metrics}};
      }
      return j.dump();
    }
  }
  return "{}";
}

absl::Duration RetryDelay(int attempts, absl::string_view retry_after) {
  int64_t seconds = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(retry_after), &seconds) && seconds > 0) {
    return absl::Seconds(std::min<int64_t>(seconds, 600));
  }
  const int shift = std::clamp(attempts - 1, 0, 10);
  return std::min(absl::Seconds(2) * (int64_t{1} << shift), absl::Seconds(60));
}

Answer Classify(int http_status) {
  if (http_status >= 200 && http_status < 300) return Answer::kDelivered;
  if (http_status == 408 || http_status == 429 || http_status >= 500) return Answer::kRetry;
  return Answer::kRefused;
}

}  // namespace booster::notify
