#include "operator/notify/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace booster::notify {

Dispatcher::Dispatcher(Poster* poster, SecretReader* secrets, Clock* clock,
                       DeliveryObserver* observer)
    : poster_(poster), secrets_(secrets), clock_(clock), observer_(observer) {}

Dispatcher::~Dispatcher() { Stop(); }

absl::Status Dispatcher::Enqueue(const Json& profile, const EventFacts& event) {
  const std::optional<Kind> kind = KindOf(event);
  if (!kind) return absl::OkStatus();
  Json::json_pointer np("/spec/notifications");
  if (!profile.contains(np)) return absl::OkStatus();
  absl::StatusOr<std::vector<Channel>> channels = ParseChannels(profile.at(np));
  if (!channels.ok()) return channels.status();
  const absl::Time now = clock_->Now();
  const Message m = BuildMessage(profile, event, *kind, now);
  Json ref = {{"apiVersion", profile.value("apiVersion", "")},
              {"kind", profile.value("kind", "")},
              {"metadata", profile.value("metadata", Json::object())}};
  ref["metadata"].erase("managedFields");
  std::vector<DeliveryReport> dropped;  // told to the observer after the lock is released
  std::unique_lock<std::mutex> l(mu_);
  for (const Channel& c : *channels) {
    if (c.kinds.count(*kind) == 0) continue;
    Delivery d;
    d.id = next_id_++;
    d.channel_key = absl::StrCat(m.ns, "/", m.profile, "/", c.name);
    d.report.ns = m.ns;
    d.report.profile = m.profile;
    d.report.channel = c.name;
    d.report.provider = c.provider;
    d.report.kind = *kind;
    d.report.profile_ref = ref;
    d.secret_name = c.secret_name;
    d.secret_key = c.secret_key;
    d.body = RenderPayload(c.provider, m);
    d.next_at = now;
    if (queue_.size() >= kMaxQueued) {
      DeliveryReport r = std::move(queue_.front().report);
      queue_.pop_front();
      r.error = absl::ResourceExhaustedError(absl::StrCat(
          "dropped: more than ", kMaxQueued, " notifications waiting to be delivered"));
      r.final = true;
      dropped.push_back(std::move(r));
    }
    queue_.push_back(std::move(d));
  }
  l.unlock();
  cv_.notify_all();
  // The observer records Events (API calls): never under the lock every reconcile takes.
  if (observer_ != nullptr) {
    for (const DeliveryReport& r : dropped) observer_->Failed(r);
  }
  return absl::OkStatus();
}

bool Dispatcher::NextDue(absl::Time now, Delivery* out) {
  std::set<std::string> waiting;  // channels with an earlier delivery not yet due
  for (const Delivery& d : queue_) {
    if (waiting.count(d.channel_key) != 0) continue;
    if (d.next_at <= now) {
      *out = d;
      return true;
    }
    waiting.insert(d.channel_key);
  }
  return false;
}

void Dispatcher::Attempt(Delivery d) {
  const absl::Time now = clock_->Now();
  if (d.first_attempt == absl::InfiniteFuture()) d.first_attempt = now;
  ++d.report.attempts;
  absl::Status error;
  std::string retry_after;
  bool refused = false;
  absl::StatusOr<std::string> url = secrets_->Read(d.report.ns, d.secret_name, d.secret_key);
  if (!url.ok()) {
    error = absl::Status(url.status().code(),
                         absl::StrCat("the webhook URL: ", url.status().message()));
  } else {
    absl::StatusOr<PostAnswer> a = poster_->Post(*url, d.body);
    if (!a.ok()) {
      // The URL may carry a token (Slack's and Teams' do): never repeated in a message.
      error =
          absl::UnavailableError(absl::StrCat("POST to the URL in Secret ", d.secret_name, " key ",
                                              d.secret_key, " failed: ", a.status().message()));
    } else {
      const Answer answer = Classify(a->status);
      if (answer != Answer::kDelivered) {
        refused = answer == Answer::kRefused;
        retry_after = a->retry_after;
        std::string body = a->body.substr(0, 200);
        error = absl::Status(
            refused ? absl::StatusCode::kFailedPrecondition : absl::StatusCode::kUnavailable,
            absl::StrCat("the receiver answered HTTP ", a->status, body.empty() ? "" : ": ", body));
      }
    }
  }
  d.report.error = error;
  const absl::Duration delay = RetryDelay(d.report.attempts, retry_after);
  const bool give_up = !error.ok() && (refused || now + delay - d.first_attempt > kGiveUpAfter);
  d.report.final = error.ok() || give_up;
  d.report.retry_in = d.report.final ? absl::ZeroDuration() : delay;
  if (give_up && !refused) {
    d.report.error = absl::DeadlineExceededError(
        absl::StrCat(error.message(), "; given up after ", d.report.attempts, " attempts"));
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it =
        std::find_if(queue_.begin(), queue_.end(), [&](const Delivery& q) { return q.id == d.id; });
    if (it != queue_.end()) {
      if (d.report.final) {
        queue_.erase(it);
      } else {
        d.next_at = now + delay;
        *it = d;
      }
    }
  }
  if (observer_ == nullptr) return;
  if (error.ok()) {
    observer_->Delivered(d.report);
  } else {
    observer_->Failed(d.report);
  }
}

absl::Time Dispatcher::RunDue() {
  // Each attempt at most once per call: a delivery retried now is due again only later.
  std::set<uint64_t> tried;
  while (true) {
    Delivery d;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return absl::InfiniteFuture();
      if (!NextDue(clock_->Now(), &d) || tried.count(d.id) != 0) break;
    }
    tried.insert(d.id);
    Attempt(std::move(d));
  }
  std::lock_guard<std::mutex> l(mu_);
  // The earliest of the channels' heads: a later delivery waits for its channel's head.
  absl::Time next = absl::InfiniteFuture();
  std::set<std::string> seen;
  for (const Delivery& d : queue_) {
    if (seen.insert(d.channel_key).second) next = std::min(next, d.next_at);
  }
  return next;
}

void Dispatcher::Loop() {
  while (true) {
    const absl::Time next = RunDue();
    std::unique_lock<std::mutex> l(mu_);
    if (stop_) return;
    // Real time between attempts, bounded so a clock that moves differently is re-read.
    const absl::Duration wait =
        std::clamp(next - clock_->Now(), absl::Milliseconds(10), absl::Seconds(1));
    cv_.wait_for(l, absl::ToChronoMilliseconds(wait));
    if (stop_) return;
  }
}

void Dispatcher::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t Dispatcher::Pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size();
}

}  // namespace booster::notify
