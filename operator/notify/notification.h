// Notifications: the pure part. Which of a profile's Events are told to whom
// (spec.notifications), what each provider receives (Slack and Microsoft Teams incoming
// webhooks, a generic JSON webhook) and when a failed delivery is tried again. No I/O:
// dispatcher.h sends what this renders (docs/notifications.md).
//
//   absl::StatusOr<std::vector<Channel>> channels =
//   ParseChannels(profile["spec"]["notifications"]); std::optional<Kind> kind = KindOf({.reason =
//   "RolledBack", .transition_to = "RolledBack"}); Message m = BuildMessage(profile, facts, *kind,
//   now); std::string body = RenderPayload(Provider::kSlack, m);
#ifndef BOOSTER_OPERATOR_NOTIFY_NOTIFICATION_H_
#define BOOSTER_OPERATOR_NOTIFY_NOTIFICATION_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace booster::notify {

using Json = nlohmann::json;

enum class Provider { kSlack, kTeams, kWebhook };
absl::string_view ProviderName(Provider p);  // "slack", "teams", "webhook"

// What a notification is about. Each is a family of the profile's Events (KindOf).
enum class Kind {
  kStepVerdict,      // a step passed, was extended, or would have failed in dry run
  kPromoted,         // the tuning is in the target
  kRollingBack,      // the decision to roll back, with its reason and the evidence
  kRolledBack,       // every replica is back without the tuning
  kFailed,           // the profile cannot go on (invalid spec, target gone, ...)
  kConflict,         // someone else holds the target or a name Booster needs
  kKnobsNotReached,  // a knob of the tuning did not take effect in the canary's pods
  kRollbackStalled,  // the rollback has not settled within the progress deadline
};
absl::string_view KindName(Kind k);  // "StepVerdict", "Promoted", ...
std::optional<Kind> KindFromName(absl::string_view name);
// Every kind but StepVerdict: what a channel gets when it lists no `events`.
std::set<Kind> DefaultKinds();

// One entry of spec.notifications.
struct Channel {
  std::string name;  // "default" unless named; labels metrics and Events
  Provider provider = Provider::kWebhook;
  std::string secret_name;             // a Secret in the profile's namespace
  std::string secret_key = "address";  // its key holding the URL
  std::set<Kind> kinds;

  bool operator==(const Channel&) const = default;
};

// spec.notifications (null or absent: none). Refuses what the CRD schema would, with the
// field's path: the API server normally has already.
absl::StatusOr<std::vector<Channel>> ParseChannels(const Json& notifications);

// One Event of a reconcile pass, as the state machine planned it.
struct EventFacts {
  std::string type;    // "Normal" or "Warning"
  std::string reason;  // the Event's reason
  std::string message;
  std::string transition_to;  // the phase the pass moved to, when the Event is that move
};
// The kind of notification an Event is, or nullopt for Events nobody is told about.
std::optional<Kind> KindOf(const EventFacts& e);

// What every provider renders, read from the profile as the pass wrote it.
struct Message {
  Kind kind = Kind::kPromoted;
  std::string event_type, reason, text;  // the Event's type, reason, message
  std::string ns, profile, target, phase;
  int step = 0;
  absl::Time time = absl::InfinitePast();
  // status.lastDecision, when the message is about a decision (StepVerdict, RollingBack,
  // RolledBack): its verdict, step, reason, message, and one line per metric judged.
  struct Decision {
    std::string verdict, reason, message;
    int step = 0;
    bool dry_run = false;
    std::vector<std::string> metrics;  // "listenOverflows: Fail, +inf% (p=1.2e-05)"
  };
  std::optional<Decision> decision;
};
Message BuildMessage(const Json& profile, const EventFacts& e, Kind kind, absl::Time now);

// The request body the provider's webhook expects (JSON text).
std::string RenderPayload(Provider p, const Message& m);

// When a delivery that failed `attempts` times (>= 1) is tried again: 2 s doubling to at
// most 60 s; a Retry-After the receiver sent (seconds) is honoured up to 10 minutes.
// Deliveries are given up `kGiveUpAfter` after the first attempt.
inline constexpr absl::Duration kGiveUpAfter = absl::Hours(1);
absl::Duration RetryDelay(int attempts, absl::string_view retry_after = "");

// What an HTTP answer means for the delivery.
enum class Answer { kDelivered, kRetry, kRefused };
// 2xx delivered; 408, 429 and 5xx retried; any other status refused for good (a wrong or
// revoked webhook URL does not start working by itself).
Answer Classify(int http_status);

}  // namespace booster::notify

#endif  // BOOSTER_OPERATOR_NOTIFY_NOTIFICATION_H_
