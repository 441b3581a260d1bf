#include "sidecar/sample/http_get.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace booster::agent {
namespace {

struct EasyCleanup {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct UrlCleanup {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlFree {
  void operator()(char* s) const { curl_free(s); }
};
using CurlString = std::unique_ptr<char, CurlFree>;

// curl_global_init is not safe to race with other threads' curl calls; the agent's first
// scrape and the tests' threads all pass through here first.
void InitCurlOnce() {
  static const CURLcode kInit = curl_global_init(CURL_GLOBAL_NOTHING);
  (void)kInit;
}

// What a URL part is, or "" when it is absent.
std::string Part(CURLU* u, CURLUPart part, unsigned flags = 0) {
  char* out = nullptr;
  if (curl_url_get(u, part, &out, flags) != CURLUE_OK || out == nullptr) return "";
  return CurlString(out).get();
}

// The body, up to a limit: a longer one makes the write fail (CURLE_WRITE_ERROR).
struct Sink {
  std::string body;
  size_t max_bytes = 0;
  bool over = false;
};

size_t Write(char* data, size_t size, size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  if (sink->body.size() + n > sink->max_bytes) {
    sink->over = true;
    return 0;
  }
  sink->body.append(data, n);
  return n;
}

}  // namespace

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
  InitCurlOnce();
  if (!absl::StartsWith(url, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("only http:// URLs are scraped: ", url));
  }
  // curl reads "http:///metrics" as the host "metrics"; here a URL without a host is a typo.
  if (url.size() == 7 || absl::StrContains("/?#", url[7])) {
    return absl::InvalidArgumentError(absl::StrCat("bad URL (no host): ", url));
  }
  std::unique_ptr<CURLU, UrlCleanup> u(curl_url());
  if (u == nullptr) return absl::ResourceExhaustedError("curl_url");
  if (CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat("bad URL ", url, ": ", curl_url_strerror(rc)));
  }
  int port = 0;
  if (!absl::SimpleAtoi(Part(u.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad URL: ", url));
  }

  std::unique_ptr<CURL, EasyCleanup> h(curl_easy_init());
  if (h == nullptr) return absl::ResourceExhaustedError("curl_easy_init");
  std::unique_ptr<curl_slist, SlistFree> headers(
      curl_slist_append(nullptr, "Accept: text/plain;version=0.0.4"));
  Sink sink;
  sink.max_bytes = max_bytes;
  char error[CURL_ERROR_SIZE] = {0};
  // 0 would mean "no timeout" to curl: an exhausted budget still times out.
  const int64_t timeout_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout));
  curl_easy_setopt(h.get(), CURLOPT_CURLU, u.get());
  curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(h.get(), CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(h.get(), CURLOPT_PROXY, "");
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(h.get(), CURLOPT_USERAGENT, "booster-agent");
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h.get(), CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &Write);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error);
  CURLcode rc = curl_easy_perform(h.get());
  if (sink.over || rc == CURLE_FILESIZE_EXCEEDED) {
    return absl::ResourceExhaustedError(
        absl::StrCat(url, " answered more than ", max_bytes, " bytes"));
  }
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat("GET ", url, ": ", error[0] != '\0' ? error : curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &code);
  HttpResponse out;
  out.code = static_cast<int>(code);
  out.body = std::move(sink.body);
  return out;
}

}  // namespace booster::agent
