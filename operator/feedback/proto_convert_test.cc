#include "operator/feedback/proto_convert.h"

#include <cmath>
#include <limits>
#include <utility>

#include "gtest/gtest.h"

namespace booster::feedback {
namespace {

namespace v1 = ::booster::v1;

AgentIdentity Agent() {
  AgentIdentity a;
  a.pod_namespace = "shop";
  a.pod_name = "web-1";
  a.pod_uid = "uid-1";
  a.pod_created = absl::FromUnixSeconds(900);
  a.node = "node-7";
  return a;
}

v1::WindowReport Report() {
  v1::WindowReport r;
  r.set_incarnation("inc-1");
  r.set_sequence(1);
  r.set_start_unix_nanos(1'000'000'000);
  r.set_end_unix_nanos(11'000'000'000);
  v1::Metric* m = r.add_metrics();
  m->set_name("latencyP99");
  m->set_value(0.25);
  m->set_samples(100);
  return r;
}

TEST(WindowFromProtoTest, PodFieldsComeFromTheIdentityNotTheReport) {
  absl::StatusOr<Window> w = WindowFromProto(Report(), Agent());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->pod, "web-1");
  EXPECT_EQ(w->pod_uid, "uid-1");
  EXPECT_EQ(w->pod_created, absl::FromUnixSeconds(900));
  EXPECT_EQ(w->node, "node-7");
  EXPECT_EQ(w->end - w->start, absl::Seconds(10));
  ASSERT_TRUE(w->Metric("latencyP99").has_value());
  EXPECT_EQ(w->Metric("latencyP99")->samples, 100);
}

TEST(WindowFromProtoTest, RefusesWhatValidateWindowRefusesAndDuplicateMetrics) {
  v1::WindowReport twice = Report();
  *twice.add_metrics() = twice.metrics(0);
  EXPECT_EQ(WindowFromProto(twice, Agent()).status().code(), absl::StatusCode::kInvalidArgument);

  v1::WindowReport nan = Report();
  nan.mutable_metrics(0)->set_value(std::nan(""));
  EXPECT_EQ(WindowFromProto(nan, Agent()).status().code(), absl::StatusCode::kInvalidArgument);

  v1::WindowReport backwards = Report();
  backwards.set_end_unix_nanos(backwards.start_unix_nanos());
  EXPECT_EQ(WindowFromProto(backwards, Agent()).status().code(),
            absl::StatusCode::kInvalidArgument);

  v1::WindowReport no_sequence = Report();
  no_sequence.set_sequence(0);
  EXPECT_FALSE(WindowFromProto(no_sequence, Agent()).ok());
}

TEST(WindowFromProtoTest, TheLatencyHistogramIsKeptAndChecked) {
  v1::WindowReport r = Report();
  absl::StatusOr<Window> none = WindowFromProto(r, Agent());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->latency_buckets, nullptr);

  v1::LatencyHistogram* h = r.mutable_latency_histogram();
  for (auto [bound, count] : {std::pair{0.1, 90.0}, {0.5, 99.0}, {INFINITY, 100.0}}) {
    h->add_upper_bounds(bound);
    h->add_counts(count);
  }
  absl::StatusOr<Window> w = WindowFromProto(r, Agent());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_NE(w->latency_buckets, nullptr);
  EXPECT_EQ(*w->latency_buckets, (Buckets{{0.1, 90}, {0.5, 99}, {INFINITY, 100}}));

  v1::WindowReport uneven = r;
  uneven.mutable_latency_histogram()->add_counts(100);
  EXPECT_EQ(WindowFromProto(uneven, Agent()).status().message(),
            "latency histogram has 3 bounds and 4 counts");
  v1::WindowReport no_inf = r;
  no_inf.mutable_latency_histogram()->set_upper_bounds(2, 1.0);
  EXPECT_EQ(WindowFromProto(no_inf, Agent()).status().message(),
            "latency histogram: the last bucket is not +Inf");
}

TEST(WindowFromProtoTest, UnknownMetricsAreIgnored) {
  v1::WindowReport r = Report();
  v1::Metric* m = r.add_metrics();
  m->set_name("fromANewerAgent");
  m->set_value(std::numeric_limits<double>::infinity());
  EXPECT_TRUE(WindowFromProto(r, Agent()).ok());
}

TEST(AppFactsFromProtoTest, KeepsWhatCanBeTrustedToCompare) {
  v1::WindowReport r;
  EXPECT_EQ(AppFactsFromProto(r), std::nullopt);
  r.set_go_version("go1.26.0");
  r.set_app_cpus(2);
  r.set_go_default_godebug("containermaxprocs=0");
  std::optional<AppFacts> f = AppFactsFromProto(r);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->go_version, "go1.26.0");
  EXPECT_EQ(f->cpus, 2);
  EXPECT_EQ(f->go_default_godebug, "containermaxprocs=0");
  r.set_go_version(std::string("go1.26\n", 7) + std::string(1, '\x01'));
  r.set_app_cpus(100000);
  EXPECT_EQ(AppFactsFromProto(r), std::nullopt);
  r.set_app_cpus(3);
  EXPECT_EQ(AppFactsFromProto(r)->go_version, "");
}

TEST(AppliedFromProtoTest, UnknownOutcomeIsUnspecified) {
  v1::Applied a;
  a.set_generation(7);
  v1::KnobResult* k = a.add_knobs();
  k->set_name("placement");
  k->set_outcome(static_cast<v1::KnobOutcome>(99));
  a.add_knobs()->set_outcome(v1::KNOB_OUTCOME_NOT_REACHABLE);
  const absl::Time now = absl::FromUnixSeconds(5);
  AppliedReport r = AppliedFromProto(a, now);
  EXPECT_EQ(r.generation, 7);
  EXPECT_EQ(r.received, now);
  ASSERT_EQ(r.knobs.size(), 2u);
  EXPECT_EQ(r.knobs[0].outcome, KnobOutcome::kUnspecified);
  EXPECT_EQ(r.knobs[1].outcome, KnobOutcome::kNotReachable);
}

TEST(HelloFromProtoTest, CopiesTheClaims) {
  v1::Hello h;
  h.set_pod_namespace("shop");
  h.set_pod_name("web-1");
  h.mutable_topology()->set_cpuset("0-3");
  HelloInfo info = HelloFromProto(h);
  EXPECT_EQ(info.claimed_pod, "web-1");
  EXPECT_EQ(info.topology.cpuset, "0-3");
}

}  // namespace
}  // namespace booster::feedback
