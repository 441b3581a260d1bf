// Fetches the application's Prometheus metrics inside the pod: from the URL or port the
// profile names, else from the port it finds itself — the pod's listening TCP sockets
// (the agent shares the pod's network namespace), lowest port first, the first one that
// answers GET <path> with Prometheus text holding a request histogram or counter (else
// the first with any metric). A found port is kept until three scrapes in a row fail.
//
//   AppScraper scraper(source, "/proc", /*discover=*/true);
//   absl::StatusOr<PromScrape> s = scraper.Scrape(target_pids);
//   scraper.url();   // "http://127.0.0.1:8080/metrics" once known
#ifndef BOOSTER_SIDECAR_SAMPLE_APP_SCRAPER_H_
#define BOOSTER_SIDECAR_SAMPLE_APP_SCRAPER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/sample/app_metrics.h"
#include "sidecar/sample/proc_stats.h"
#include "sidecar/sample/prom_text.h"

namespace booster::agent {

// The address to scrape a listening socket at: loopback for wildcard and loopback
// sockets ("0.0.0.0", "::", "::ffff:127.0.0.1" -> "127.0.0.1"; "::1" -> "[::1]"), the
// socket's own address otherwise. Pure.
std::string ScrapeHost(const std::string& socket_address);

// Ports worth probing, lowest first, at most `limit`: LISTEN sockets not owned by the
// agent (`own_inodes`) and, when `target_inodes` is non-empty (the targets' fds could be
// read), only theirs. Pure.
std::vector<ListeningSocket> ProbeCandidates(const std::vector<ListeningSocket>& sockets,
                                             const std::vector<uint64_t>& own_inodes,
                                             const std::vector<uint64_t>& target_inodes,
                                             size_t limit = 16);

class AppScraper {
 public:
  // `discover`: find the port when `source` names neither url nor port.
  AppScraper(AppMetricsSource source, std::string proc_root, bool discover);

  // kFailedPrecondition when there is nothing to scrape (no port given, discovery off),
  // kNotFound when discovery found no endpoint, kUnavailable when the endpoint failed,
  // kInvalidArgument when it did not answer Prometheus text.
  absl::StatusOr<PromScrape> Scrape(const std::vector<int>& targets);

  const std::string& url() const { return url_; }
  const AppMetricsSource& source() const { return source_; }

 private:
  absl::StatusOr<PromScrape> Fetch(const std::string& url, absl::Duration timeout) const;
  absl::StatusOr<PromScrape> Discover(const std::vector<int>& targets);

  AppMetricsSource source_;
  std::string proc_root_;
  bool discover_;
  std::string url_;  // fixed, or found by Discover
  int failures_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_APP_SCRAPER_H_
