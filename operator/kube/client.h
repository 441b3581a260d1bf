// Client: the REST verbs of the Kubernetes API for any group/version/resource, CRDs
// included, over a Transport. Adds the bearer token (re-read through TokenSource),
// applies the client-side rate limit, retries 429 answers after the server's
// Retry-After, and maps every answer to absl::Status (see api_status.h).
//
//   auto client = NewClient(*config);                        // cpprest_transport.h
//   absl::StatusOr<Json> cm = (*client)->Get(kConfigMaps, "default", "settings");
//   if (absl::IsNotFound(cm.status())) ...
#ifndef BOOSTER_OPERATOR_KUBE_CLIENT_H_
#define BOOSTER_OPERATOR_KUBE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/kube/config.h"
#include "operator/kube/json.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/transport.h"

namespace booster::kube {

// A resource type: group ("" for the core group), version, plural resource name.
struct Resource {
  std::string group;
  std::string version;
  std::string resource;
  bool namespaced = true;

  // "/api/v1" or "/apis/<group>/<version>".
  std::string GroupVersionPath() const;
  // "v1" or "<group>/<version>", the apiVersion field of objects.
  std::string ApiVersion() const;
};

inline const Resource kConfigMaps{"", "v1", "configmaps", true};
inline const Resource kPods{"", "v1", "pods", true};
inline const Resource kEvents{"", "v1", "events", true};
inline const Resource kNamespaces{"", "v1", "namespaces", false};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const Resource kDeployments{"apps", "v1", "deployments", true};
inline const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                                 "customresourcedefinitions", false};

// Path of a collection or object: ns may be "" (all namespaces / cluster-scoped), name
// "" (the collection), subresource "" or "status"/"scale".
std::string ResourcePath(const Resource& r, absl::string_view ns, absl::string_view name = "",
                         absl::string_view subresource = "");

// Percent-encodes a query value.
std::string QueryEscape(absl::string_view s);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;             // page size; 0 = unpaged
  std::string continue_token;
  std::string resource_version;  // "" = most recent (quorum read)
  std::string resource_version_match;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  int64_t timeout_seconds = 0;   // server closes the watch after this; 0 = server default
  bool allow_bookmarks = true;
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply: take ownership of conflicting fields
  std::string subresource;    // "", "status", "scale"
};

struct DeleteOptions {
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> grace_period_seconds;
};

// Bounds the unary requests (Get, List, Create, Update, Patch, Delete, Do) that this
// thread makes while it lives, like a Go context deadline: each is sent with at most the
// time left as its timeout, a retry is not waited for past it, and once it has passed a
// request fails with kDeadlineExceeded unsent. The deadline is on the client's clock.
// Nested scopes keep the earlier deadline. Streams and watches ignore it.
//
//   RequestDeadline bound(clock->Now() + renew_deadline);
//   client->Update(kLeases, ns, lease);  // at most until the renew deadline
class RequestDeadline {
 public:
  explicit RequestDeadline(absl::Time deadline);
  ~RequestDeadline();
  RequestDeadline(const RequestDeadline&) = delete;
  RequestDeadline& operator=(const RequestDeadline&) = delete;

  // The deadline of this thread's innermost scope, if any.
  static std::optional<absl::Time> Current();

 private:
  std::optional<absl::Time> previous_;
};

class Client {
 public:
  // `transport` is owned; `clock` is not and must outlive the client.
  Client(const Config& config, std::unique_ptr<Transport> transport,
         Clock* clock = &RealClock::Get());

  absl::StatusOr<Json> Get(const Resource& r, absl::string_view ns, absl::string_view name,
                           absl::string_view subresource = "");
  // One page; follow metadata.continue with options.continue_token.
  absl::StatusOr<Json> List(const Resource& r, absl::string_view ns, const ListOptions& options);
  // Every page, merged into one list (items of all pages; metadata of the last page).
  absl::StatusOr<Json> ListAll(const Resource& r, absl::string_view ns, ListOptions options);
  // Every page, like ListAll, but each page is parsed while it arrives (read as a stream)
  // and each item goes to `on_item` as soon as the parser has finished it: neither a
  // page's text nor its tree is ever held, so memory stays at one item and one network
  // chunk however long the list (the API server sends a resourceVersion=0 list whole).
  // Items get the kind and apiVersion a watch would give them (from the list's own).
  // Returns the last page with an empty items array (its metadata.resourceVersion is the
  // list's). On an error, the items before it have been delivered already.
  absl::StatusOr<Json> ListEach(const Resource& r, absl::string_view ns, ListOptions options,
                                const std::function<void(Json item)>& on_item);
  absl::StatusOr<Json> Create(const Resource& r, absl::string_view ns, const Json& obj);
  // PUT of obj (metadata.name, and metadata.resourceVersion for optimistic concurrency).
  absl::StatusOr<Json> Update(const Resource& r, absl::string_view ns, const Json& obj,
                              absl::string_view subresource = "");
  absl::StatusOr<Json> UpdateStatus(const Resource& r, absl::string_view ns, const Json& obj) {
    return Update(r, ns, obj, "status");
  }
  absl::StatusOr<Json> Patch(const Resource& r, absl::string_view ns, absl::string_view name,
                             PatchType type, const Json& patch, const PatchOptions& options = {});
  absl::Status Delete(const Resource& r, absl::string_view ns, absl::string_view name,
                      const DeleteOptions& options = {});
  absl::StatusOr<Json> GetScale(const Resource& r, absl::string_view ns, absl::string_view name) {
    return Get(r, ns, name, "scale");
  }
  absl::StatusOr<Json> UpdateScale(const Resource& r, absl::string_view ns, const Json& scale) {
    return Update(r, ns, scale, "scale");
  }
  // Opens a watch; read it with a WatchDecoder. A non-2xx answer (410 included) is the
  // returned status.
  absl::StatusOr<std::unique_ptr<ResponseStream>> Watch(const Resource& r, absl::string_view ns,
                                                        const WatchOptions& options);

  // Any request; the body of a 2xx answer is returned as text.
  absl::StatusOr<std::string> Do(std::string method, std::string path, std::string body,
                                 std::string content_type = "application/json");

  const Config& config() const { return config_; }
  Clock* clock() const { return clock_; }

 private:
  // GET of `path` as a stream (a list parsed while it arrives), with Do()'s retries.
  absl::StatusOr<std::unique_ptr<ResponseStream>> StreamGet(std::string path);
  absl::StatusOr<Json> DoJson(std::string method, std::string path, std::string body,
                              std::string content_type = "application/json");
  absl::Status AddAuth(HttpRequest* request);

  const Config config_;
  const std::unique_ptr<Transport> transport_;
  Clock* const clock_;
  TokenBucket limiter_;
  TokenSource tokens_;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_CLIENT_H_
