// Every message the operator receives from an agent (proto/booster/v1/agent.proto) is
// bytes from the network, parsed by protobuf and turned into feedback types by
// operator/feedback/proto_convert.h; a window report then goes into the WindowStore the
// judge reads. Checks: no message crashes the conversion or the store; a window the
// conversion accepts passes ValidateWindow, is accepted by a store with an open step and
// comes back from a query with its metrics; conversion is deterministic across a
// serialise/parse round trip of the message.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "booster/v1/agent.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "fuzz/fuzz_check.h"
#include "operator/feedback/proto_convert.h"
#include "operator/feedback/window_store.h"

namespace {

namespace fb = booster::feedback;
namespace v1 = booster::v1;

fb::AgentIdentity Identity() {
  fb::AgentIdentity a;
  a.pod_namespace = "shop";
  a.pod_name = "web-1";
  a.pod_uid = "uid-1";
  a.profile = "shop/web";
  a.arm = fb::Arm::kCanary;
  a.pod_created = absl::InfinitePast();  // no warm-up filter in the query
  return a;
}

bool SameWindow(const fb::Window& a, const fb::Window& b) {
  if (a.pod != b.pod || a.pod_uid != b.pod_uid || a.incarnation != b.incarnation ||
      a.sequence != b.sequence || a.start != b.start || a.end != b.end ||
      a.template_hash != b.template_hash || a.profile_generation != b.profile_generation) {
    return false;
  }
  for (int i = 0; i < fb::kMetricCount; ++i) {
    if (a.metrics[i].has_value() != b.metrics[i].has_value()) return false;
    if (a.metrics[i] && (a.metrics[i]->value != b.metrics[i]->value ||
                         a.metrics[i]->samples != b.metrics[i]->samples)) {
      return false;
    }
  }
  return true;
}

void CheckReport(const v1::WindowReport& report, const v1::WindowReport& reparsed) {
  const fb::AgentIdentity agent = Identity();
  absl::StatusOr<fb::Window> w = fb::WindowFromProto(report, agent);
  absl::StatusOr<fb::Window> again = fb::WindowFromProto(reparsed, agent);
  FUZZ_CHECK(w.ok() == again.ok(), "round trip changed the verdict: %s",
             w.status().ToString().c_str());
  if (!w.ok()) {
    FUZZ_CHECK(w.status().code() == absl::StatusCode::kInvalidArgument, "code %s",
               w.status().ToString().c_str());
    return;
  }
  FUZZ_CHECK(SameWindow(*w, *again), "round trip changed the window");
  FUZZ_CHECK(fb::ValidateWindow(*w).ok(), "accepted window fails ValidateWindow");

  fb::WindowStore store;
  fb::StepId step;
  step.generation = 1;
  step.step = 1;
  store.BeginStep(agent.profile, step, {"", ""});
  const fb::AddResult added = store.Add(agent.profile, agent.arm, *w);
  FUZZ_CHECK(added == fb::AddResult::kAccepted, "store refused a valid window: %s",
             std::string(fb::AddResultName(added)).c_str());
  FUZZ_CHECK(store.Add(agent.profile, agent.arm, *w) == fb::AddResult::kDuplicate,
             "the same window twice is not a duplicate");
  absl::StatusOr<fb::StepWindows> q = store.Query(agent.profile, step);
  FUZZ_CHECK(q.ok(), "query: %s", q.status().ToString().c_str());
  const fb::ArmWindows& arm = q->arm(agent.arm);
  FUZZ_CHECK(arm.windows == 1, "%zu windows stored", arm.windows);
  for (int i = 0; i < fb::kMetricCount; ++i) {
    if (!w->metrics[i]) continue;
    auto it = arm.metrics.find(std::string(fb::kMetricNames[i]));
    FUZZ_CHECK(it != arm.metrics.end() && it->second.size() == 1 &&
                   it->second[0].value == w->metrics[i]->value,
               "metric %s lost", std::string(fb::kMetricNames[i]).c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  google::protobuf::LogSilencer quiet;  // invalid UTF-8 is logged, then refused
  v1::AgentMessage m;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == '#') {
    // The committed seeds are text format ("# proto-message: ..." first) to stay readable;
    // they are turned into wire bytes, which is all the server ever parses.
    v1::AgentMessage text;
    if (!google::protobuf::TextFormat::ParseFromString(bytes, &text)) return 0;
    bytes.clear();
    if (!text.SerializeToString(&bytes)) return 0;  // e.g. invalid UTF-8 in a string
  }
  if (!m.ParseFromString(bytes)) return 0;
  std::string again;
  FUZZ_CHECK(m.SerializeToString(&again), "a parsed message does not serialise");
  v1::AgentMessage reparsed;
  FUZZ_CHECK(reparsed.ParseFromString(again), "own serialisation does not parse");

  switch (m.body_case()) {
    case v1::AgentMessage::kHello: {
      const fb::HelloInfo a = fb::HelloFromProto(m.hello());
      const fb::HelloInfo b = fb::HelloFromProto(reparsed.hello());
      FUZZ_CHECK(a.claimed_uid == b.claimed_uid && a.topology.cpuset == b.topology.cpuset,
                 "hello changed through a round trip");
      break;
    }
    case v1::AgentMessage::kReport:
      CheckReport(m.report(), reparsed.report());
      break;
    case v1::AgentMessage::kApplied: {
      const fb::AppliedReport a = fb::AppliedFromProto(m.applied(), absl::UnixEpoch());
      FUZZ_CHECK(a.knobs.size() == static_cast<size_t>(m.applied().knobs_size()),
                 "knobs dropped");
      break;
    }
    default:
      break;
  }
  return 0;
}
