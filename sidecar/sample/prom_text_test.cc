#include "sidecar/sample/prom_text.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/testing/testdata.h"

namespace booster::agent {
namespace {

using ::booster::agent_testing::Fixture;

TEST(PromTextTest, ParsesSamplesLabelsAndSpecialValues) {
  absl::StatusOr<PromScrape> s = ParsePrometheusText(
      "# HELP x_total Things.\n"
      "# TYPE x_total counter\n"
      "x_total{b=\"2\",a=\"q\\\"uote\\\\\"} 12.5 1700000000000\n"
      "y +Inf\n"
      "z{} NaN\n"
      "w{a=\"1\",} -Inf\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->samples.size(), 4u);
  EXPECT_EQ(s->types.at("x_total"), "counter");
  EXPECT_EQ(s->samples[0].value, 12.5);
  EXPECT_EQ(s->samples[0].labels[0].second, "q\"uote\\");
  // The key escapes the value again, as the exposition format does.
  EXPECT_EQ(SeriesKey(s->samples[0].name, s->samples[0].labels),
            "x_total{a=\"q\\\"uote\\\\\",b=\"2\"}");
  EXPECT_TRUE(std::isinf(s->samples[1].value));
  EXPECT_TRUE(std::isnan(s->samples[2].value));
  EXPECT_LT(s->samples[3].value, 0);
}

TEST(PromTextTest, RejectsMalformedLines) {
  for (const char* bad :
       {"x{a=\"1\" 1\n", "x{a=1} 1\n", "x\n", "x abc\n", "{a=\"b\"} 1\n", "x 1 2 3\n"}) {
    EXPECT_FALSE(ParsePrometheusText(bad).ok()) << bad;
  }
}

// Found by fuzz/prom_text_fuzzer: a series given twice read as a counter reset between
// its two samples, so two identical scrapes gave a window with observations in it.
TEST(PromTextTest, DuplicateSeriesKeepTheFirstSampleAsPrometheusDoes) {
  const std::string text =
      "# TYPE lat_seconds histogram\n"
      "lat_seconds_bucket{le=\"0.1\"} 20\n"
      "lat_seconds_bucket{le=\"+Inf\"} 22\n"
      "lat_seconds_bucket{le=\"0.1\"} 90\n"
      "lat_seconds_bucket{le=\"+Inf\"} 95\n"
      "req_total 5\n"
      "req_total 7\n";
  absl::StatusOr<PromScrape> s = ParsePrometheusText(text);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->samples.size(), 3u);
  EXPECT_EQ(s->samples[0].value, 20);
  EXPECT_EQ(s->samples[1].value, 22);
  EXPECT_EQ(s->samples[2].value, 5);
  PromWindow w = ComputeWindow(*s, *s, 10);
  ASSERT_EQ(w.histograms.count("lat_seconds"), 1u);
  EXPECT_EQ(w.histograms["lat_seconds"].count, 0);
}

// Found by fuzz/prom_text_fuzzer: label values were not escaped in the key, so the one
// label a="1\",b=\"2" and the two labels a="1", b="2" were the same series.
TEST(PromTextTest, SeriesKeyEscapesLabelValuesSoDistinctSeriesNeverCollide) {
  const PromLabels one = {{"a", "1\",b=\"2"}};
  const PromLabels two = {{"a", "1"}, {"b", "2"}};
  EXPECT_NE(SeriesKey("x", one), SeriesKey("x", two));
  EXPECT_EQ(SeriesKey("x", two), "x{a=\"1\",b=\"2\"}");
  EXPECT_EQ(SeriesKey("x", {{"p", "a\\b\nc"}}), "x{p=\"a\\\\b\\nc\"}");
  absl::StatusOr<PromScrape> s = ParsePrometheusText(
      "x{a=\"1\\\",b=\\\"2\"} 1\n"
      "x{a=\"1\",b=\"2\"} 2\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->samples.size(), 2u);  // two series, not a duplicate
}

TEST(PromTextTest, SumOfSamplesAndCounterIncrease) {
  absl::StatusOr<PromScrape> before = ParsePrometheusText(
      "# TYPE c_total counter\n"
      "c_total{a=\"1\"} 10\n"
      "c_total{a=\"2\"} 50\n"
      "c_total{a=\"gone\"} 7\n"
      "g 3\n");
  absl::StatusOr<PromScrape> after = ParsePrometheusText(
      "# TYPE c_total counter\n"
      "c_total{a=\"1\"} 15\n"     // +5
      "c_total{a=\"2\"} 4\n"      // reset: +4
      "c_total{a=\"3\"} 2\n"      // new: +2
      "c_total{a=\"nan\"} NaN\n"  // left out
      "g{x=\"1\"} 1.5\n"
      "g{x=\"2\"} 2.5\n"
      "h NaN\n");
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(CounterIncrease(*before, *after, "c_total"), 11);
  EXPECT_EQ(CounterIncrease(*after, *after, "c_total"), 0);
  EXPECT_EQ(CounterIncrease(*before, *after, "absent_total"), std::nullopt);
  EXPECT_EQ(CounterIncrease(*after, *before, "g"), 3) << "g is new in `after` here: whole";
  EXPECT_EQ(SumOfSamples(*after, "g"), 4);
  EXPECT_EQ(SumOfSamples(*before, "g"), 3);
  EXPECT_EQ(SumOfSamples(*after, "h"), std::nullopt) << "no finite value";
  EXPECT_EQ(SumOfSamples(*after, "c"), std::nullopt) << "names are matched whole";
}

TEST(PromTextTest, WindowFromHandWrittenScrapes) {
  const char* kBefore =
      "# TYPE req_total counter\nreq_total{code=\"200\"} 100\nreq_total{code=\"500\"} 50\n"
      "# TYPE lat_seconds histogram\n"
      "lat_seconds_bucket{le=\"0.01\"} 10\nlat_seconds_bucket{le=\"0.1\"} 20\n"
      "lat_seconds_bucket{le=\"+Inf\"} 20\nlat_seconds_sum 1\nlat_seconds_count 20\n";
  const char* kAfter =
      "# TYPE req_total counter\nreq_total{code=\"200\"} 300\nreq_total{code=\"500\"} 10\n"
      "# TYPE lat_seconds histogram\n"
      "lat_seconds_bucket{le=\"0.01\"} 10\nlat_seconds_bucket{le=\"0.1\"} 110\n"
      "lat_seconds_bucket{le=\"+Inf\"} 120\nlat_seconds_sum 11\nlat_seconds_count 120\n";
  PromWindow w = ComputeWindow(*ParsePrometheusText(kBefore), *ParsePrometheusText(kAfter), 10);
  EXPECT_DOUBLE_EQ(w.counter_rates.at("req_total{code=\"200\"}"), 20);
  // The 500 counter went down: a restart; its whole value counts.
  EXPECT_DOUBLE_EQ(w.counter_rates.at("req_total{code=\"500\"}"), 1);
  const HistogramWindow& h = w.histograms.at("lat_seconds");
  // The window's 100 observations: 90 in (0.01, 0.1], 10 above 0.1. Observations before
  // the window (all fast) must not pull the quantiles down.
  EXPECT_DOUBLE_EQ(h.count, 100);
  EXPECT_DOUBLE_EQ(h.rate, 10);
  EXPECT_DOUBLE_EQ(h.mean, 0.1);
  EXPECT_DOUBLE_EQ(h.p50, 0.01 + 0.09 * 50 / 90);
  EXPECT_DOUBLE_EQ(h.p90, 0.1);
  EXPECT_DOUBLE_EQ(h.p99, 0.1);
}

TEST(PromTextTest, WindowFromARealGoProgram) {
  absl::StatusOr<PromScrape> a = ParsePrometheusText(Fixture("app_metrics_1.txt"));
  absl::StatusOr<PromScrape> b = ParsePrometheusText(Fixture("app_metrics_2.txt"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_GT(b->samples.size(), 300u);
  PromWindow w = ComputeWindow(*a, *b, 4);
  EXPECT_DOUBLE_EQ(
      w.counter_rates.at("prometheus_http_requests_total{code=\"200\",handler=\"/api/v1/query\"}"),
      (25 - 5) / 4.0);
  const HistogramWindow& h =
      w.histograms.at("prometheus_http_request_duration_seconds{handler=\"/metrics\"}");
  EXPECT_DOUBLE_EQ(h.count, 27 - 6);
  EXPECT_NEAR(h.mean, (0.04836176699999999 - 0.020434190999999997) / 21, 1e-12);
  // Every request fell in the first bucket (<= 0.1 s).
  EXPECT_DOUBLE_EQ(h.p50, 0.05);
  EXPECT_DOUBLE_EQ(h.p99, 0.099);
  // go_gc_duration_seconds is a summary: window mean from sum/count, quantiles as exposed.
  const SummaryWindow& gc = w.summaries.at("go_gc_duration_seconds");
  EXPECT_DOUBLE_EQ(gc.count, 1);
  EXPECT_NEAR(gc.mean, 0.00066309 - 0.000571901, 1e-12);
  EXPECT_DOUBLE_EQ(gc.quantiles.at("0.5"), 9.1189e-05);
}

}  // namespace
}  // namespace booster::agent
