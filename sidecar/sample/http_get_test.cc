#include "sidecar/sample/http_get.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/sample/prom_text.h"
#include "sidecar/testing/test_app_server.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(HttpGetTest, RejectsUrlsItDoesNotScrapeAndReportsConnectionErrors) {
  for (const char* bad : {"https://x/", "HTTP://x/", "ftp://127.0.0.1/", "127.0.0.1:8080/m", "",
                          "http://x:99999/", "http://x:0/", "http://x:y/", "http:///metrics",
                          "http://", "http://:80/", "http://?x", "http://a b/"}) {
    EXPECT_EQ(HttpGet(bad, absl::Seconds(2)).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  // Nothing listens on port 1 of loopback: a connection error, not a hang. An IPv6 literal
  // (the scraper's "[::1]") is a URL like any other.
  EXPECT_EQ(HttpGet("http://127.0.0.1:1/", absl::Seconds(2)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpGet("http://[::1]:1/m", absl::Seconds(2)).status().code(),
            absl::StatusCode::kUnavailable);
}

// HTTP/1.1, with the path and query as given.
TEST(HttpGetTest, SendsTheRequestLineAsGiven) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  absl::StatusOr<std::string> echo = HttpGet(app.url("/echo?x=1"), absl::Seconds(5));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(*echo, "GET /echo?x=1 HTTP/1.1\n");
}

// The server answers in chunks of 100 bytes (and refuses an HTTP/1.0 client): the body
// comes out whole, without the chunk framing, the same as the Content-Length answer.
TEST(HttpGetTest, ReadsAChunkedBodyWhole) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  ASSERT_TRUE(HttpGet(app.url("/"), absl::Seconds(5)).ok());  // a series to expose
  absl::StatusOr<std::string> plain = HttpGet(app.url("/metrics"), absl::Seconds(5));
  absl::StatusOr<std::string> chunked = HttpGet(app.url("/metrics-chunked"), absl::Seconds(5));
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(chunked.ok()) << chunked.status();
  EXPECT_GT(chunked->size(), 1000u) << "more than ten chunks";
  EXPECT_EQ(*chunked, *plain);
  EXPECT_THAT(*chunked, Not(HasSubstr("\r\n")));
  absl::StatusOr<PromScrape> scrape = ParsePrometheusText(*chunked);
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->types.at("http_request_duration_seconds"), "histogram");
}

TEST(HttpGetTest, ABodyAboveTheLimitIsResourceExhausted) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  ASSERT_TRUE(HttpGet(app.url("/"), absl::Seconds(5)).ok());
  for (const char* path : {"/metrics", "/metrics-chunked"}) {  // Content-Length, chunked
    EXPECT_EQ(HttpGet(app.url(path), absl::Seconds(5), /*max_bytes=*/100).status().code(),
              absl::StatusCode::kResourceExhausted)
        << path;
  }
}

// A server that accepts the connection (the kernel does, into the listen backlog) and
// never answers: the timeout ends the request.
TEST(HttpGetTest, TimesOutOnAServerThatNeverAnswers) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  absl::Time start = absl::Now();
  absl::StatusOr<std::string> r = HttpGet(
      absl::StrCat("http://127.0.0.1:", ntohs(addr.sin_port), "/metrics"), absl::Milliseconds(300));
  absl::Duration took = absl::Now() - start;
  close(fd);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(10));
}

}  // namespace
}  // namespace booster::agent
