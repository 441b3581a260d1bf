#include "sidecar/sample/http_get.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace booster::agent {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` until `deadline`.
absl::Status Wait(int fd, short events, absl::Time deadline) {
  while (true) {
    int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return absl::UnavailableError("timed out");
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, static_cast<int>(ms));
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) return absl::UnavailableError(std::strerror(errno));
  }
}

}  // namespace

absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  if (!absl::StartsWith(url, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("only http:// URLs are scraped: ", url));
  }
  std::string rest = url.substr(7);
  HttpUrl u;
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) u.path = rest.substr(slash);
  if (!hostport.empty() && hostport[0] == '[') {  // [::1]:8080
    size_t close = hostport.find(']');
    if (close == std::string::npos) return absl::InvalidArgumentError("bad IPv6 host: " + url);
    u.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') {
      u.port = hostport.substr(close + 2);
    }
  } else {
    size_t colon = hostport.rfind(':');
    u.host = hostport.substr(0, colon);
    if (colon != std::string::npos) u.port = hostport.substr(colon + 1);
  }
  int port = 0;
  if (u.host.empty() || !absl::SimpleAtoi(u.port, &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad URL: ", url));
  }
  return u;
}

absl::StatusOr<std::string> HttpGet(const std::string& url, absl::Duration timeout,
                                    size_t max_bytes) {
  absl::StatusOr<HttpResponse> r = HttpFetch(url, timeout, max_bytes);
  if (!r.ok()) return r.status();
  if (r->code < 200 || r->code > 299) {
    return absl::UnavailableError(absl::StrCat(url, " answered HTTP ", r->code));
  }
  return std::move(r->body);
}

absl::StatusOr<HttpResponse> HttpFetch(const std::string& url, absl::Duration timeout,
                                       size_t max_bytes) {
  absl::StatusOr<HttpUrl> u = ParseHttpUrl(url);
  if (!u.ok()) return u.status();
  absl::Time deadline = absl::Now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(u->host.c_str(), u->port.c_str(), &hints, &res); rc != 0) {
    return absl::UnavailableError(absl::StrCat("resolve ", u->host, ": ", gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError("no address");
  std::string response;
  bool connected = false;
  for (addrinfo* ai = res; ai != nullptr && !connected; ai = ai->ai_next) {
    Fd fd(socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (fd.get() < 0) continue;
    if (connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = absl::UnavailableError(absl::StrCat("connect ", url, ": ", std::strerror(errno)));
      continue;
    }
    if (absl::Status s = Wait(fd.get(), POLLOUT, deadline); !s.ok()) {
      last = absl::UnavailableError(absl::StrCat("connect ", url, ": ", s.message()));
      continue;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last = absl::UnavailableError(absl::StrCat("connect ", url, ": ", std::strerror(err)));
      continue;
    }
    connected = true;
    std::string req = absl::StrCat("GET ", u->path, " HTTP/1.0\r\nHost: ", u->host, ":", u->port,
                                   "\r\nAccept: text/plain;version=0.0.4\r\n"
                                   "User-Agent: booster-agent\r\n\r\n");
    size_t sent = 0;
    while (sent < req.size()) {
      if (absl::Status s = Wait(fd.get(), POLLOUT, deadline); !s.ok()) {
        freeaddrinfo(res);
        return absl::UnavailableError(absl::StrCat("send to ", url, ": ", s.message()));
      }
      ssize_t n = send(fd.get(), req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        freeaddrinfo(res);
        return absl::UnavailableError(absl::StrCat("send to ", url, ": ", std::strerror(errno)));
      }
      if (n > 0) sent += static_cast<size_t>(n);
    }
    char buf[16384];
    while (true) {
      if (absl::Status s = Wait(fd.get(), POLLIN, deadline); !s.ok()) {
        freeaddrinfo(res);
        return absl::UnavailableError(absl::StrCat("read from ", url, ": ", s.message()));
      }
      ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        freeaddrinfo(res);
        return absl::UnavailableError(absl::StrCat("read from ", url, ": ", std::strerror(errno)));
      }
      response.append(buf, static_cast<size_t>(n));
      if (response.size() > max_bytes) {
        freeaddrinfo(res);
        return absl::ResourceExhaustedError(
            absl::StrCat(url, " answered more than ", max_bytes, " bytes"));
      }
    }
  }
  freeaddrinfo(res);
  if (!connected) return last;
  size_t header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos || !absl::StartsWith(response, "HTTP/")) {
    return absl::UnavailableError(absl::StrCat(url, ": not an HTTP response"));
  }
  size_t sp = response.find(' ');
  int code = 0;
  if (sp == std::string::npos || !absl::SimpleAtoi(response.substr(sp + 1, 3), &code)) {
    return absl::UnavailableError(absl::StrCat(url, ": bad status line"));
  }
  HttpResponse out;
  out.code = code;
  out.body = response.substr(header_end + 4);
  return out;
}

}  // namespace booster::agent
