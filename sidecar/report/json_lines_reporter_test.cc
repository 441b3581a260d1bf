#include "sidecar/report/json_lines_reporter.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

using Json = nlohmann::json;

AgentIdentity Identity() {
  AgentIdentity id;
  id.pod_namespace = "shop";
  id.pod_name = "web-1";
  id.pod_uid = "uid-1";
  id.node_name = "node-a";
  id.profile = "shop/web";
  id.arm = "canary";
  id.mode = "tune";
  id.template_hash = "9f2c";
  id.incarnation = "0123456789abcdef0123456789abcdef";
  id.agent_version = "0.1.0";
  return id;
}

TEST(JsonLinesReporterTest, ReportCarriesIdentitySequenceAndEveryMetric) {
  WindowRecord rec;
  rec.identity = Identity();
  rec.sequence = 12;
  rec.generation = 3;
  rec.report.start = absl::FromUnixSeconds(1'700'000'000);
  rec.report.end = absl::FromUnixSeconds(1'700'000'030);
  RequestWindow q;
  q.seconds = 30;
  q.request_source = "http_requests_total";
  q.requests = 300;
  q.notes = {"no request latency histogram in the scrape"};
  rec.report.requests = q;
  rec.report.go_runtime.emplace();
  rec.report.go_runtime->seconds = 30;
  rec.report.go_runtime->heap_bytes = 5e6;
  rec.report.go_version = "go1.26.0";
  rec.report.go_default_godebug = "containermaxprocs=0";
  rec.report.app_cpus = 2;
  rec.metrics = ComputeWindowMetrics(rec.report);

  Json j = Json::parse(ReportJson(rec));
  EXPECT_EQ(j["type"], "report");
  EXPECT_EQ(j["namespace"], "shop");
  EXPECT_EQ(j["pod"], "web-1");
  EXPECT_EQ(j["pod_uid"], "uid-1");
  EXPECT_EQ(j["profile"], "shop/web");
  EXPECT_EQ(j["arm"], "canary");
  EXPECT_EQ(j["mode"], "tune");
  EXPECT_EQ(j["template_hash"], "9f2c");
  EXPECT_EQ(j["incarnation"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(j["sequence"], 12);
  EXPECT_EQ(j["generation"], 3);
  ASSERT_EQ(j["metrics"].size(), kWindowMetricNames.size());
  for (absl::string_view name : kWindowMetricNames) {
    EXPECT_TRUE(j["metrics"].contains(std::string(name))) << name;
  }
  EXPECT_DOUBLE_EQ(j["metrics"]["goHeapBytes"]["value"].get<double>(), 5e6);
  EXPECT_THAT(j["metrics"]["goGcCpuShare"]["missing"].get<std::string>(),
              testing::HasSubstr("go_cpu_classes_gc_total_cpu_seconds_total"));
  EXPECT_EQ(j["go_version"], "go1.26.0");
  EXPECT_EQ(j["go_default_godebug"], "containermaxprocs=0");
  EXPECT_EQ(j["app_cpus"], 2);
  EXPECT_EQ(j["go_runtime"]["heap_bytes"], 5e6);
  EXPECT_TRUE(j["go_runtime"]["gc_cpu_seconds"].is_null());
  EXPECT_DOUBLE_EQ(j["metrics"]["throughput"]["value"].get<double>(), 10);
  EXPECT_EQ(j["metrics"]["throughput"]["samples"], 300);
  EXPECT_FALSE(j["metrics"]["throughput"].contains("missing"));
  // Missing is null with the reason, never 0.
  EXPECT_TRUE(j["metrics"]["latencyP99"]["value"].is_null());
  EXPECT_EQ(j["metrics"]["latencyP99"]["samples"], 0);
  EXPECT_THAT(j["metrics"]["latencyP99"]["missing"].get<std::string>(),
              testing::HasSubstr("no latency histogram"));
  EXPECT_EQ(j["requests"]["request_source"], "http_requests_total");
  EXPECT_EQ(j["start"], "2023-11-14T22:13:20.000Z");
}

TEST(JsonLinesReporterTest, HelloAndFileLines) {
  char tmpl[] = "/tmp/booster-reporter-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/r.jsonl";
  {
    absl::StatusOr<std::unique_ptr<JsonLinesReporter>> r = JsonLinesReporter::Open(path);
    ASSERT_TRUE(r.ok()) << r.status();
    HelloInfo h;
    h.identity = Identity();
    h.topology.cpuset = "0-3";
    h.topology.cpu_quota_cores = 1.5;
    h.topology_summary = "4 CPUs, 4 cores, 1 NUMA nodes";
    (*r)->Hello(h);
    WindowRecord rec;
    rec.identity = Identity();
    rec.sequence = 1;
    rec.metrics = ComputeWindowMetrics(rec.report);
    (*r)->Report(rec);
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  std::system(("rm -rf " + dir).c_str());
  ASSERT_TRUE(text.ok());
  std::vector<std::string> lines = absl::StrSplit(*text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u);
  Json hello = Json::parse(lines[0]);
  EXPECT_EQ(hello["type"], "hello");
  EXPECT_EQ(hello["incarnation"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(hello["agent_version"], "0.1.0");
  EXPECT_EQ(hello["cpuset"], "0-3");
  EXPECT_DOUBLE_EQ(hello["cpu_quota_cores"].get<double>(), 1.5);
  EXPECT_EQ(Json::parse(lines[1])["sequence"], 1);
}

// What the JSON lines promise their readers (the integration test and bench/agent grep
// them): one compact line, keys in the order written, strings escaped, numbers exact.
TEST(JsonLinesReporterTest, AppliedLineKeepsItsKeyOrderOnOneCompactLine) {
  AppliedStatus s;
  s.generation = 3;
  s.arm = "canary";
  s.action = "apply";
  s.applied = {"placement: cpus 0-1"};
  s.target_pids = {41, 42};
  std::string line = AppliedJson(s);
  EXPECT_EQ(line,
            R"({"type":"applied","generation":3,"arm":"canary","action":"apply","ok":true,)"
            R"("applied":["placement: cpus 0-1"],"failed":[],"target_pids":[41,42]})");
}

TEST(JsonLinesReporterTest, StringsAreEscapedAndNonFiniteFiguresAreNull) {
  WindowRecord rec;
  rec.identity = Identity();
  rec.identity.pod_name = "a\"b\\c\nd\x01";
  rec.identity.node_name = "bad \xff utf-8";
  rec.sequence = std::numeric_limits<uint64_t>::max();
  rec.report.cpu_cores = std::numeric_limits<double>::infinity();
  rec.report.throttled_ratio = std::numeric_limits<double>::quiet_NaN();
  rec.report.runq_delay_per_second = 0.5;
  rec.metrics = ComputeWindowMetrics(rec.report);
  std::string line = ReportJson(rec);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_THAT(line, testing::HasSubstr(R"("pod":"a\"b\\c\nd\u0001")"));
  EXPECT_THAT(line, testing::HasSubstr(R"("sequence":18446744073709551615)"));
  Json j = Json::parse(line);
  EXPECT_EQ(j["pod"], "a\"b\\c\nd\x01");
  EXPECT_EQ(j["node"], "bad \xEF\xBF\xBD utf-8") << "invalid UTF-8 becomes U+FFFD";
  EXPECT_EQ(j["sequence"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(j["cpu_cores"].is_null());
  EXPECT_TRUE(j["throttled_ratio"].is_null());
  EXPECT_DOUBLE_EQ(j["runq_delay_per_second"].get<double>(), 0.5);
}

}  // namespace
}  // namespace booster::agent
