#include "sidecar/feedback/feedback_reporter.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/feedback/feedback_adapter.h"

namespace booster::agent {
namespace {

void LogToStderr(absl::string_view line) {
  std::fprintf(stderr, "booster-agent: %.*s\n", static_cast<int>(line.size()), line.data());
}

const char* FeedbackActionName(FeedbackAction a) {
  switch (a) {
    case FeedbackAction::kObserve:
      return "observe";
    case FeedbackAction::kApply:
      return "apply";
    case FeedbackAction::kRollback:
      return "rollback";
    case FeedbackAction::kUnspecified:
      break;
  }
  return "unknown action";
}

}  // namespace

absl::StatusOr<std::unique_ptr<FeedbackReporter>> FeedbackReporter::Create(
    FeedbackReporterOptions options) {
  std::unique_ptr<FeedbackReporter> r(new FeedbackReporter(std::move(options)));
  FeedbackClientOptions client = r->options_.client;
  FeedbackReporter* self = r.get();
  client.on_directive = [self](const FeedbackDirective& d) { self->OnDirective(d); };
  absl::StatusOr<std::unique_ptr<FeedbackClient>> c = FeedbackClient::Create(std::move(client));
  if (!c.ok()) return c.status();
  r->client_ = *std::move(c);
  return r;
}

FeedbackReporter::FeedbackReporter(FeedbackReporterOptions options) : options_(std::move(options)) {
  if (!options_.log) options_.log = LogToStderr;
}

FeedbackReporter::~FeedbackReporter() {
  if (client_ != nullptr) client_->Stop();
}

void FeedbackReporter::Hello(const HelloInfo& info) {
  if (options_.tee != nullptr) options_.tee->Hello(info);
  client_->SetTopology(FeedbackTopologyFromInfo(info.topology));
  client_->Start();
}

void FeedbackReporter::Applied(const AppliedStatus& s) {
  if (options_.tee != nullptr) options_.tee->Applied(s);
  client_->Applied(FeedbackAppliedFromStatus(s));
  std::string what = absl::StrCat("applied: generation ", s.generation, " (", s.action, ")");
  if (!s.ok) {
    options_.log(absl::StrCat(what, " failed: ", absl::StrJoin(s.failed, "; ")));
  } else if (!s.knobs.empty()) {
    options_.log(absl::StrCat(what, " ok: ", absl::StrJoin(s.knobs, ", ")));
  } else {
    options_.log(absl::StrCat(what, " ok, nothing applied"));
  }
}

void FeedbackReporter::Report(const WindowRecord& record) {
  if (options_.tee != nullptr) options_.tee->Report(record);
  absl::StatusOr<uint64_t> sequence = client_->Report(FeedbackWindowFromRecord(record));
  if (!sequence.ok()) {
    options_.log(absl::StrCat("window ", record.sequence,
                              " not sent to the operator: ", sequence.status().message()));
    return;
  }
  absl::MutexLock l(&mu_);
  if (first_window_logged_) return;
  first_window_logged_ = true;
  options_.log(absl::StrCat("window reports go to the operator at ", options_.client.address,
                            " (first one queued); further windows are not logged: see "
                            "booster_agent_feedback_* on /metrics"));
}

void FeedbackReporter::OnDirective(const FeedbackDirective& d) {
  OperatorDirectives::Offered o = directives_.Offer(d);
  std::vector<std::string> keys;
  for (const auto& [key, value] : d.settings) keys.push_back(key);
  std::string what =
      absl::StrCat("directive generation ", d.generation, " from the operator (",
                   FeedbackActionName(d.action), ", arm ", d.arm.empty() ? "-" : d.arm,
                   keys.empty() ? "" : ": ", absl::StrJoin(keys, ", "), ")");
  switch (o.result) {
    case OperatorDirectives::Result::kQueued:
      options_.log(absl::StrCat(what, ": applying at the next tick"));
      break;
    case OperatorDirectives::Result::kStale:
      options_.log(absl::StrCat(what, ": ignored, generation not above the last one"));
      break;
    case OperatorDirectives::Result::kRefused: {
      std::vector<std::string> reasons;
      for (const FeedbackKnob& k : o.answer->knobs) {
        if (k.outcome != FeedbackKnobOutcome::kApplied) {
          reasons.push_back(absl::StrCat(k.name, ": ", k.reason));
        }
      }
      options_.log(
          absl::StrCat(what, ": refused, nothing changed: ", absl::StrJoin(reasons, "; ")));
      client_->Applied(*std::move(o.answer));
      break;
    }
  }
}

}  // namespace booster::agent
