#include "sidecar/sample/app_scraper.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sidecar/base/file_util.h"
#include "sidecar/sample/http_get.h"

namespace booster::agent {
namespace {

constexpr int kMaxFailures = 3;

// Socket inodes among the open files of `fd_dir` (/proc/<pid>/fd); empty when unreadable.
std::vector<uint64_t> SocketInodes(const std::string& fd_dir) {
  std::vector<uint64_t> out;
  DIR* d = opendir(fd_dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char link[256];
    std::string path = fd_dir + "/" + e->d_name;
    ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0) continue;
    absl::string_view target(link, static_cast<size_t>(n));
    uint64_t inode = 0;
    if (absl::ConsumePrefix(&target, "socket:[") && absl::ConsumeSuffix(&target, "]") &&
        absl::SimpleAtoi(target, &inode)) {
      out.push_back(inode);
    }
  }
  closedir(d);
  return out;
}

}  // namespace

std::string ScrapeHost(const std::string& a) {
  if (a == "0.0.0.0" || a == "::" || absl::StartsWith(a, "127.") ||
      absl::StartsWith(a, "::ffff:127.")) {
    return "127.0.0.1";
  }
  if (a == "::1") return "[::1]";
  if (absl::StartsWith(a, "::ffff:") && !absl::StrContains(a.substr(7), ':')) return a.substr(7);
  if (absl::StrContains(a, ':')) return absl::StrCat("[", a, "]");
  return a;
}

std::vector<ListeningSocket> ProbeCandidates(const std::vector<ListeningSocket>& sockets,
                                             const std::vector<uint64_t>& own_inodes,
                                             const std::vector<uint64_t>& target_inodes,
                                             size_t limit) {
  std::set<uint64_t> own(own_inodes.begin(), own_inodes.end());
  std::set<uint64_t> targets(target_inodes.begin(), target_inodes.end());
  std::vector<ListeningSocket> out;
  std::set<std::pair<std::string, int>> seen;
  for (const ListeningSocket& s : sockets) {
    if (own.count(s.inode) > 0) continue;
    if (!targets.empty() && targets.count(s.inode) == 0) continue;
    if (!seen.insert({ScrapeHost(s.address), s.port}).second) continue;  // v4 and v6 twins
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const ListeningSocket& a, const ListeningSocket& b) {
    return a.port != b.port ? a.port < b.port : a.address < b.address;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

AppScraper::AppScraper(AppMetricsSource source, std::string proc_root, bool discover)
    : source_(std::move(source)), proc_root_(std::move(proc_root)), discover_(discover) {
  if (!source_.url.empty()) {
    url_ = source_.url;
  } else if (source_.port != 0) {
    url_ = absl::StrCat("http://127.0.0.1:", source_.port, source_.path);
  }
}

absl::StatusOr<PromScrape> AppScraper::Fetch(const std::string& url, absl::Duration timeout) const {
  absl::StatusOr<std::string> body = HttpGet(url, timeout);
  if (!body.ok()) return body.status();
  absl::StatusOr<PromScrape> s = ParsePrometheusText(*body);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(url, " did not answer Prometheus text: ", s.status().message()));
  }
  return s;
}

absl::StatusOr<PromScrape> AppScraper::Discover(const std::vector<int>& targets) {
  if (targets.empty()) return absl::NotFoundError("no application process to find a port of");
  std::string net = absl::StrCat(proc_root_, "/", targets.front(), "/net/");
  std::vector<ListeningSocket> sockets;
  for (bool v6 : {false, true}) {
    absl::StatusOr<std::string> text = ReadFile(net + (v6 ? "tcp6" : "tcp"));
    if (!text.ok()) continue;
    absl::StatusOr<std::vector<ListeningSocket>> s = ParseListeningSockets(*text, v6);
    if (s.ok()) sockets.insert(sockets.end(), s->begin(), s->end());
  }
  std::vector<uint64_t> target_inodes;
  for (int pid : targets) {
    std::vector<uint64_t> i = SocketInodes(absl::StrCat(proc_root_, "/", pid, "/fd"));
    target_inodes.insert(target_inodes.end(), i.begin(), i.end());
  }
  std::vector<ListeningSocket> candidates =
      ProbeCandidates(sockets, SocketInodes("/proc/self/fd"), target_inodes);
  std::optional<std::pair<std::string, PromScrape>> fallback;
  for (const ListeningSocket& c : candidates) {
    std::string url = absl::StrCat("http://", ScrapeHost(c.address), ":", c.port, source_.path);
    absl::StatusOr<PromScrape> s = Fetch(url, absl::Seconds(1));
    if (!s.ok() || s->samples.empty()) continue;
    AppSeriesChoice choice = ChooseAppSeries(*s, source_);
    if (!choice.histogram.empty() || !choice.counter.empty()) {
      url_ = url;
      return s;
    }
    if (!fallback.has_value()) fallback.emplace(url, *std::move(s));
  }
  if (fallback.has_value()) {
    url_ = fallback->first;
    return std::move(fallback->second);
  }
  return absl::NotFoundError(absl::StrCat("no listening port of the pod answers GET ", source_.path,
                                          " with Prometheus metrics (", candidates.size(),
                                          " ports tried)"));
}

absl::StatusOr<PromScrape> AppScraper::Scrape(const std::vector<int>& targets) {
  if (url_.empty()) {
    if (!discover_) {
      return absl::FailedPreconditionError(
          "no application metrics port: set BOOSTER_APP_METRICS {\"port\": N}");
    }
    return Discover(targets);
  }
  absl::StatusOr<PromScrape> s = Fetch(url_, absl::Seconds(2));
  if (s.ok()) {
    failures_ = 0;
  } else if (discover_ && source_.url.empty() && source_.port == 0 && ++failures_ >= kMaxFailures) {
    url_.clear();  // the application moved or restarted elsewhere: look again next time
    failures_ = 0;
  }
  return s;
}

}  // namespace booster::agent
