#include "operator/kube/client.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "operator/kube/api_status.h"

namespace booster::kube {
namespace {

void AddParam(std::string* path, bool* first, absl::string_view key, absl::string_view value) {
  if (value.empty()) return;
  absl::StrAppend(path, *first ? "?" : "&", key, "=", QueryEscape(value));
  *first = false;
}

// Longest wait honoured from a Retry-After header; a server asking for more is treated as
// unavailable and the error goes back to the caller's own backoff.
constexpr absl::Duration kMaxRetryAfter = absl::Seconds(30);

// How long to wait before attempt `attempt + 1` of a request that failed with `s` (HTTP
// `http_status`), or nullopt to give the error back. A 429 (or a 5xx with Retry-After)
// means the server did not act on the request, so any verb can be retried after the delay
// it asked for.
std::optional<absl::Duration> RetryDelay(const absl::Status& s, int http_status, int attempt,
                                         int max_retries) {
  std::optional<absl::Duration> after = RetryAfter(s);
  if (!after || attempt >= max_retries || *after > kMaxRetryAfter ||
      (http_status != 429 && http_status < 500)) {
    return std::nullopt;
  }
  return std::max(*after, absl::Milliseconds(100));
}

}  // namespace

std::string Resource::GroupVersionPath() const {
  return group.empty() ? absl::StrCat("/api/", version) : absl::StrCat("/apis/", group, "/", version);
}

std::string Resource::ApiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourcePath(const Resource& r, absl::string_view ns, absl::string_view name,
                         absl::string_view subresource) {
  std::string p = r.GroupVersionPath();
  if (r.namespaced && !ns.empty()) absl::StrAppend(&p, "/namespaces/", QueryEscape(ns));
  absl::StrAppend(&p, "/", r.resource);
  if (!name.empty()) absl::StrAppend(&p, "/", QueryEscape(name));
  if (!subresource.empty()) absl::StrAppend(&p, "/", subresource);
  return p;
}

std::string QueryEscape(absl::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Client::Client(const Config& config, std::unique_ptr<Transport> transport, Clock* clock)
    : config_(config), transport_(std::move(transport)), clock_(clock),
      limiter_(config.qps, config.burst, clock), tokens_(config, clock) {}

absl::Status Client::AddAuth(HttpRequest* request) {
  absl::StatusOr<std::string> token = tokens_.Token();
  if (!token.ok()) return token.status();
  if (!token->empty()) request->headers.emplace_back("Authorization", "Bearer " + *token);
  request->headers.emplace_back("User-Agent", config_.user_agent);
  return absl::OkStatus();
}

namespace {
thread_local std::optional<absl::Time> tls_request_deadline;
}  // namespace

RequestDeadline::RequestDeadline(absl::Time deadline) : previous_(tls_request_deadline) {
  tls_request_deadline = previous_.has_value() ? std::min(*previous_, deadline) : deadline;
}

RequestDeadline::~RequestDeadline() { tls_request_deadline = previous_; }

std::optional<absl::Time> RequestDeadline::Current() { return tls_request_deadline; }

absl::StatusOr<std::string> Client::Do(std::string method, std::string path, std::string body,
                                       std::string content_type) {
  HttpRequest req;
  req.method = std::move(method);
  req.path = std::move(path);
  req.body = std::move(body);
  req.headers.emplace_back("Accept", "application/json");
  if (!req.body.empty()) req.headers.emplace_back("Content-Type", content_type);
  if (absl::Status s = AddAuth(&req); !s.ok()) return s;
  const std::optional<absl::Time> deadline = RequestDeadline::Current();
  for (int attempt = 0;; ++attempt) {
    limiter_.Wait();
    req.timeout = config_.request_timeout;
    if (deadline.has_value()) {
      const absl::Duration left = *deadline - clock_->Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(
            absl::StrCat(req.method, " ", req.path, ": the caller's deadline has passed"));
      }
      req.timeout = std::min(req.timeout, left);
    }
    absl::StatusOr<HttpResponse> resp = transport_->Send(req);
    if (!resp.ok()) return resp.status();
    absl::Status s = StatusFromHttp(resp->status, resp->body, resp->retry_after);
    if (s.ok()) return std::move(resp->body);
    std::optional<absl::Duration> delay =
        RetryDelay(s, resp->status, attempt, config_.max_retries);
    if (!delay || (deadline.has_value() && clock_->Now() + *delay >= *deadline)) return s;
    clock_->SleepFor(*delay);
  }
}

absl::StatusOr<Json> Client::DoJson(std::string method, std::string path, std::string body,
                                    std::string content_type) {
  absl::StatusOr<std::string> text =
      Do(std::move(method), std::move(path), std::move(body), std::move(content_type));
  if (!text.ok()) return text.status();
  absl::StatusOr<Json> j = ParseJson(*text);
  if (!j.ok()) return absl::InternalError(absl::StrCat("API server answer: ", j.status().message()));
  return j;
}

absl::StatusOr<Json> Client::Get(const Resource& r, absl::string_view ns, absl::string_view name,
                                 absl::string_view subresource) {
  if (name.empty()) return absl::InvalidArgumentError("Get: empty name");
  return DoJson("GET", ResourcePath(r, ns, name, subresource), "");
}

namespace {

std::string ListPath(const Resource& r, absl::string_view ns, const ListOptions& options) {
  std::string path = ResourcePath(r, ns);
  bool first = true;
  AddParam(&path, &first, "labelSelector", options.label_selector);
  AddParam(&path, &first, "fieldSelector", options.field_selector);
  if (options.limit > 0) AddParam(&path, &first, "limit", absl::StrCat(options.limit));
  AddParam(&path, &first, "continue", options.continue_token);
  AddParam(&path, &first, "resourceVersion", options.resource_version);
  AddParam(&path, &first, "resourceVersionMatch", options.resource_version_match);
  return path;
}

}  // namespace

absl::StatusOr<Json> Client::List(const Resource& r, absl::string_view ns,
                                  const ListOptions& options) {
  return DoJson("GET", ListPath(r, ns, options), "");
}

absl::StatusOr<Json> Client::ListAll(const Resource& r, absl::string_view ns,
                                     ListOptions options) {
  Json all;
  Json items = Json::array();
  for (;;) {
    absl::StatusOr<Json> page = List(r, ns, options);
    if (!page.ok()) return page.status();
    auto it = page->find("items");
    if (it != page->end() && it->is_array()) {
      for (Json& item : *it) items.push_back(std::move(item));
    }
    std::string next = JsonString(*page, "/metadata/continue");
    all = std::move(*page);
    if (next.empty()) break;
    options.continue_token = std::move(next);
    // Later pages are served from the first page's snapshot; a resourceVersion must not
    // be combined with continue.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
  all["items"] = std::move(items);
  return all;
}

namespace {

// Reads a streamed response body one chunk at a time for the JSON parser, which sees one
// character sequence: a list is parsed while it arrives and never held whole.
class ChunkReader {
 public:
  explicit ChunkReader(ResponseStream* stream) : stream_(stream) {}

  // An input iterator over the body; equal to the default-constructed end iterator once
  // the body (or the stream, on an error) has ended.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    Iterator() = default;
    explicit Iterator(ChunkReader* r) : r_(r) { r_->Fill(); }
    reference operator*() const { return r_->chunk_[r_->pos_]; }
    Iterator& operator++() {
      ++r_->pos_;
      r_->Fill();
      return *this;
    }
    bool operator==(const Iterator& o) const { return AtEnd() == o.AtEnd(); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    bool AtEnd() const { return r_ == nullptr || r_->done_; }
    ChunkReader* r_ = nullptr;
  };

  Iterator begin() { return Iterator(this); }
  Iterator end() { return Iterator(); }
  const absl::Status& status() const { return status_; }
  size_t bytes() const { return bytes_; }

 private:
  // Makes chunk_[pos_] the next character, reading on when the chunk is used up.
  void Fill() {
    while (!done_ && pos_ >= chunk_.size()) {
      absl::StatusOr<std::string> next = stream_->Read();
      if (!next.ok()) {
        status_ = next.status();
        done_ = true;
      } else if (next->empty()) {
        done_ = true;
      } else {
        chunk_ = *std::move(next);
        bytes_ += chunk_.size();
        pos_ = 0;
      }
    }
  }

  ResponseStream* const stream_;
  std::string chunk_;
  size_t pos_ = 0;
  bool done_ = false;
  size_t bytes_ = 0;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResponseStream>> Client::StreamGet(std::string path) {
  HttpRequest req;
  req.method = "GET";
  req.path = std::move(path);
  req.timeout = config_.request_timeout;  // for a stream: the longest silence
  req.headers.emplace_back("Accept", "application/json");
  if (absl::Status s = AddAuth(&req); !s.ok()) return s;
  for (int attempt = 0;; ++attempt) {
    limiter_.Wait();
    absl::StatusOr<StreamResponse> resp = transport_->Stream(req);
    if (!resp.ok()) return resp.status();
    absl::Status s = StatusFromHttp(resp->status, resp->error_body, resp->retry_after);
    if (s.ok()) return std::move(resp->stream);
    std::optional<absl::Duration> delay =
        RetryDelay(s, resp->status, attempt, config_.max_retries);
    if (!delay) return s;
    clock_->SleepFor(*delay);
  }
}

absl::StatusOr<Json> Client::ListEach(const Resource& r, absl::string_view ns,
                                      ListOptions options,
                                      const std::function<void(Json item)>& on_item) {
  using Event = Json::parse_event_t;
  for (;;) {
    absl::StatusOr<std::unique_ptr<ResponseStream>> stream =
        StreamGet(ListPath(r, ns, options));
    if (!stream.ok()) return stream.status();
    // The parser calls back at every key, value and object end. Depth 1 is the list's own
    // fields; an object ending at depth 2 under "items" is a finished item: it is moved
    // out and dropped from the tree (returning false discards it). Items finished before
    // the list's kind was seen (never from an API server, which sends kind first) wait
    // for it.
    std::string field;
    std::string kind;
    bool kind_seen = false;
    std::string api_version = r.ApiVersion();
    std::vector<Json> waiting;
    auto deliver = [&](Json item) {
      if (!kind.empty() && !item.contains("kind")) item["kind"] = kind;
      if (!item.contains("apiVersion")) item["apiVersion"] = api_version;
      on_item(std::move(item));
    };
    auto flush = [&] {
      for (Json& item : waiting) deliver(std::move(item));
      waiting.clear();
    };
    Json::parser_callback_t cb = [&](int depth, Event event, Json& parsed) {
      if (depth == 1) {
        if (event == Event::key && parsed.is_string()) {
          field = parsed.get<std::string>();
        } else if (event == Event::value && parsed.is_string()) {
          const std::string& v = parsed.get_ref<const std::string&>();
          if (field == "apiVersion") api_version = v;
          if (field == "kind") {
            kind = std::string(absl::StripSuffix(v, "List"));
            kind_seen = true;
            flush();
          }
        }
        return true;
      }
      if (depth == 2 && event == Event::object_end && field == "items") {
        if (kind_seen) {
          deliver(std::move(parsed));
        } else {
          waiting.push_back(std::move(parsed));
        }
        return false;
      }
      return true;
    };
    ChunkReader body(stream->get());
    Json page = Json::parse(body.begin(), body.end(), cb, /*allow_exceptions=*/false);
    if (!body.status().ok()) {
      return absl::UnavailableError(absl::StrCat("list ", r.resource, ": reading the answer: ",
                                                 body.status().message()));
    }
    if (page.is_discarded() || !page.is_object()) {
      return absl::InternalError(absl::StrCat("API server answer: malformed list (",
                                              body.bytes(), " bytes)"));
    }
    flush();
    std::string next = JsonString(page, "/metadata/continue");
    if (next.empty()) {
      page["items"] = Json::array();
      return page;
    }
    options.continue_token = std::move(next);
    // Later pages are served from the first page's snapshot; a resourceVersion must not
    // be combined with continue.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
}

absl::StatusOr<Json> Client::Create(const Resource& r, absl::string_view ns, const Json& obj) {
  return DoJson("POST", ResourcePath(r, ns), obj.dump());
}

absl::StatusOr<Json> Client::Update(const Resource& r, absl::string_view ns, const Json& obj,
                                    absl::string_view subresource) {
  std::string name = JsonString(obj, "/metadata/name");
  if (name.empty()) return absl::InvalidArgumentError("Update: object has no metadata.name");
  return DoJson("PUT", ResourcePath(r, ns, name, subresource), obj.dump());
}

absl::StatusOr<Json> Client::Patch(const Resource& r, absl::string_view ns, absl::string_view name,
                                   PatchType type, const Json& patch,
                                   const PatchOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("Patch: empty name");
  std::string content_type;
  switch (type) {
    case PatchType::kMerge:
      content_type = "application/merge-patch+json";
      break;
    case PatchType::kJson:
      content_type = "application/json-patch+json";
      break;
    case PatchType::kStrategicMerge:
      content_type = "application/strategic-merge-patch+json";
      break;
    case PatchType::kApply:
      content_type = "application/apply-patch+yaml";  // JSON is valid YAML
      if (options.field_manager.empty()) {
        return absl::InvalidArgumentError("server-side apply needs a field manager");
      }
      break;
  }
  std::string path = ResourcePath(r, ns, name, options.subresource);
  bool first = true;
  AddParam(&path, &first, "fieldManager", options.field_manager);
  if (type == PatchType::kApply && options.force) AddParam(&path, &first, "force", "true");
  return DoJson("PATCH", std::move(path), patch.dump(), content_type);
}

absl::Status Client::Delete(const Resource& r, absl::string_view ns, absl::string_view name,
                            const DeleteOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("Delete: empty name");
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  return Do("DELETE", ResourcePath(r, ns, name), body.dump()).status();
}

absl::StatusOr<std::unique_ptr<ResponseStream>> Client::Watch(const Resource& r,
                                                              absl::string_view ns,
                                                              const WatchOptions& options) {
  std::string path = ResourcePath(r, ns);
  bool first = true;
  AddParam(&path, &first, "watch", "1");
  AddParam(&path, &first, "labelSelector", options.label_selector);
  AddParam(&path, &first, "fieldSelector", options.field_selector);
  AddParam(&path, &first, "resourceVersion", options.resource_version);
  if (options.timeout_seconds > 0) {
    AddParam(&path, &first, "timeoutSeconds", absl::StrCat(options.timeout_seconds));
  }
  if (options.allow_bookmarks) AddParam(&path, &first, "allowWatchBookmarks", "true");
  HttpRequest req;
  req.method = "GET";
  req.path = std::move(path);
  // The server sends bookmarks about once a minute and closes after timeoutSeconds; allow
  // that much silence plus slack before calling the connection dead.
  req.timeout = absl::Seconds(std::max<int64_t>(options.timeout_seconds, 60) + 60);
  req.headers.emplace_back("Accept", "application/json");
  if (absl::Status s = AddAuth(&req); !s.ok()) return s;
  limiter_.Wait();
  absl::StatusOr<StreamResponse> resp = transport_->Stream(req);
  if (!resp.ok()) return resp.status();
  absl::Status s = StatusFromHttp(resp->status, resp->error_body, resp->retry_after);
  if (!s.ok()) return s;
  return std::move(resp->stream);
}

}  // namespace booster::kube
