#include "sidecar/sample/app_scraper.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/sample/http_get.h"
#include "sidecar/testing/test_app_server.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AppScraperTest, ScrapeHosts) {
  EXPECT_EQ(ScrapeHost("0.0.0.0"), "127.0.0.1");
  EXPECT_EQ(ScrapeHost("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(ScrapeHost("127.0.0.53"), "127.0.0.1");
  EXPECT_EQ(ScrapeHost("::"), "127.0.0.1");  // dual-stack: Go's ":8080"
  EXPECT_EQ(ScrapeHost("::ffff:127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(ScrapeHost("::1"), "[::1]");
  EXPECT_EQ(ScrapeHost("10.1.2.3"), "10.1.2.3");  // bound to the pod IP only
  EXPECT_EQ(ScrapeHost("::ffff:10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(ScrapeHost("fd00::5"), "[fd00::5]");
}

TEST(AppScraperTest, ProbeCandidates) {
  std::vector<ListeningSocket> s = {{"0.0.0.0", 9901, 1},  // the agent's own
                                    {"::", 8080, 2},       // the app, dual stack
                                    {"0.0.0.0", 8080, 3},  // the same port over IPv4
                                    {"127.0.0.1", 15000, 4},
                                    {"0.0.0.0", 80, 5}};
  auto ports = [](const std::vector<ListeningSocket>& v) {
    std::vector<int> out;
    for (const ListeningSocket& x : v) out.push_back(x.port);
    return out;
  };
  EXPECT_THAT(ports(ProbeCandidates(s, {1}, {})), ElementsAre(80, 8080, 15000));
  // The targets' own sockets, when their fds can be read.
  EXPECT_THAT(ports(ProbeCandidates(s, {1}, {2, 4})), ElementsAre(8080, 15000));
  EXPECT_THAT(ports(ProbeCandidates(s, {1}, {}, 2)), ElementsAre(80, 8080));
}

// A real server process: of its two listening ports, the agent finds the one that answers
// GET /metrics with a request histogram, and keeps scraping it.
TEST(AppScraperTest, FindsTheMetricsPortOfARealServer) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  ASSERT_TRUE(HttpGet(app.url("/"), absl::Seconds(5)).ok());
  AppScraper scraper(AppMetricsSource{}, "/proc", /*discover=*/true);
  EXPECT_EQ(scraper.url(), "");
  absl::StatusOr<PromScrape> s = scraper.Scrape({app.pid()});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(scraper.url(), app.url("/metrics"));
  EXPECT_EQ(s->types.at("http_request_duration_seconds"), "histogram");
  EXPECT_TRUE(scraper.Scrape({app.pid()}).ok());

  // The server goes away: after three failed scrapes the port is forgotten, and with no
  // process to look at there is nothing to find.
  app.Stop();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scraper.Scrape({}).status().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(scraper.url(), "");
  EXPECT_EQ(scraper.Scrape({}).status().code(), absl::StatusCode::kNotFound);
}

TEST(AppScraperTest, AGivenPortIsScrapedAsIsAndNeverForgotten) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  AppMetricsSource src;
  src.port = app.app_port();
  AppScraper scraper(src, "/proc", /*discover=*/true);
  EXPECT_EQ(scraper.url(), app.url("/metrics"));
  ASSERT_TRUE(scraper.Scrape({}).ok());
  src.port = app.other_port();  // answers 404
  AppScraper wrong(src, "/proc", true);
  absl::StatusOr<PromScrape> s = wrong.Scrape({app.pid()});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("answered HTTP 404"));
  for (int i = 0; i < 3; ++i) wrong.Scrape({app.pid()}).IgnoreError();
  EXPECT_EQ(wrong.url(), absl::StrCat("http://127.0.0.1:", app.other_port(), "/metrics"));
}

// An application whose /metrics answers in chunks (Go's net/http does for a body longer
// than its buffer) is scraped and parsed whole.
TEST(AppScraperTest, AChunkedMetricsResponseIsParsedWhole) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  ASSERT_TRUE(HttpGet(app.url("/"), absl::Seconds(5)).ok());
  AppMetricsSource src;
  src.port = app.app_port();
  src.path = "/metrics-chunked";
  AppScraper scraper(src, "/proc", /*discover=*/false);
  absl::StatusOr<PromScrape> s = scraper.Scrape({app.pid()});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->types.at("http_request_duration_seconds"), "histogram");
  EXPECT_EQ(s->types.at("http_requests_total"), "counter");
}

TEST(AppScraperTest, NothingToScrapeWithoutPortOrDiscovery) {
  AppScraper scraper(AppMetricsSource{}, "/proc", /*discover=*/false);
  absl::StatusOr<PromScrape> s = scraper.Scrape({getpid()});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("BOOSTER_APP_METRICS"));
}

}  // namespace
}  // namespace booster::agent
