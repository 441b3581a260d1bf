#include "operator/kube/informer.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "operator/kube/api_status.h"
#include "operator/kube/backoff.h"
#include "operator/kube/watch_decoder.h"

namespace booster::kube {

void DropManagedFields(Json* obj) {
  auto md = obj->find("metadata");
  if (md != obj->end() && md->is_object()) md->erase("managedFields");
}

Informer::Informer(Client* client, Resource resource, InformerOptions options, Clock* clock)
    : client_(client), resource_(std::move(resource)), options_(std::move(options)),
      clock_(clock), store_(StoreOptions{.compact = options_.compact_cache}),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {
  if (options_.index_namespace) store_.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
  if (options_.index_owner) store_.AddIndexer(kOwnerIndex, OwnerIndexFunc);
  if (options_.index_labels) store_.AddIndexer(kLabelIndex, LabelIndexFunc);
}

Informer::~Informer() { Stop(); }

void Informer::AddEventHandler(EventHandlers handlers) { handlers_.push_back(std::move(handlers)); }

void Informer::Resume(std::vector<Json> items, std::string resource_version) {
  std::vector<ObjectPtr> objs;
  objs.reserve(items.size());
  for (Json& item : items) objs.push_back(Prepare(std::move(item)));
  Store::Delta delta = store_.Replace(std::move(objs));
  for (const ObjectPtr& o : delta.added) {
    for (auto& h : handlers_) if (h.on_add) h.on_add(o);
  }
  std::lock_guard<std::mutex> l(mu_);
  rv_ = std::move(resource_version);
  resumed_ = true;
  synced_ = true;
}

void Informer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    if (active_ != nullptr) active_->Cancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::Stopping() const {
  std::lock_guard<std::mutex> l(mu_);
  return stopping_;
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> l(mu_);
  return synced_;
}

bool Informer::WaitForSync(absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, absl::ToChronoNanoseconds(timeout),
                      [&] { return synced_ || stopping_; }) &&
         synced_;
}

std::string Informer::LastResourceVersion() const {
  std::lock_guard<std::mutex> l(mu_);
  return rv_;
}

bool Informer::Sleep(absl::Duration d) {
  std::unique_lock<std::mutex> l(mu_);
  return WaitUnlessStopped(*clock_, cv_, l, d, [this] { return stopping_; });
}

ObjectPtr Informer::Prepare(Json obj) {
  if (options_.transform) options_.transform(&obj);
  return std::make_shared<const Json>(std::move(obj));
}

void Informer::Run() {
  Backoff backoff(options_.backoff_initial, options_.backoff_max, 2.0, 0.2, rng_());
  bool need_list = !resumed_;
  // After a 410 the list must not come from the watch cache, which may be older still.
  bool consistent = !options_.list_from_watch_cache || resumed_;
  while (!Stopping()) {
    if (need_list) {
      absl::Status s = ListAndReplace(consistent);
      if (!s.ok()) {
        std::fprintf(stderr, "kube informer %s: list failed: %s\n", resource_.resource.c_str(),
                     s.ToString().c_str());
        if (IsExpired(s)) consistent = true;
        if (!Sleep(backoff.Next())) break;
        continue;
      }
      need_list = false;
      backoff.Reset();
    }
    absl::Status s = WatchOnce();
    if (Stopping()) break;
    if (IsExpired(s)) {
      // Our resourceVersion was compacted away: only a fresh list can bring us back in
      // sync. Relist at once, as client-go does.
      need_list = true;
      consistent = true;
      relists_.fetch_add(1);
      continue;
    }
    if (!s.ok()) {
      std::fprintf(stderr, "kube informer %s: watch failed: %s\n", resource_.resource.c_str(),
                   s.ToString().c_str());
      if (!Sleep(backoff.Next())) break;
      continue;
    }
    backoff.Reset();  // closed by the server's timeout: watch again from where we are
  }
}

absl::Status Informer::ListAndReplace(bool consistent) {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  // std::string(1, '0'), not "0": GCC 12 reports a false -Wrestrict for the literal here.
  if (!consistent) lo.resource_version = std::string(1, '0');
  std::unordered_set<std::string> listed;
  int64_t events = 0;
  absl::StatusOr<Json> list = client_->ListEach(resource_, options_.ns, lo, [&](Json item) {
    ObjectPtr obj = Prepare(std::move(item));
    Store::Upserted u = store_.UpsertIfChanged(obj);
    listed.insert(ObjectKey(*obj));
    if (!u.stored) return;
    ++events;
    for (auto& h : handlers_) {
      if (u.old != nullptr) {
        if (h.on_update) h.on_update(u.old, obj);
      } else if (h.on_add) {
        h.on_add(obj);
      }
    }
  });
  if (!list.ok()) {
    events_.fetch_add(events);
    return list.status();
  }
  for (const ObjectPtr& o : store_.DeleteExcept(listed)) {
    ++events;
    for (auto& h : handlers_) if (h.on_delete) h.on_delete(o);
  }
  events_.fetch_add(events);
  listed = {};
// Not under AddressSanitizer: its allocator replaces glibc's, and glibc's malloc_trim then
// sets up arena state that aborts at thread exit ("a->attached_threads > 0").
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  if (options_.trim_after_list) malloc_trim(0);
#endif
  {
    std::lock_guard<std::mutex> l(mu_);
    rv_ = JsonString(*list, "/metadata/resourceVersion");
    synced_ = true;
  }
  cv_.notify_all();
  return absl::OkStatus();
}

void Informer::Handle(WatchEvent ev) {
  std::string rv = JsonString(ev.object, "/metadata/resourceVersion");
  switch (ev.type) {
    case WatchEventType::kBookmark:
      break;
    case WatchEventType::kAdded:
    case WatchEventType::kModified: {
      ObjectPtr obj = Prepare(std::move(ev.object));
      ObjectPtr old = store_.Upsert(obj);
      for (auto& h : handlers_) {
        if (old != nullptr) {
          if (h.on_update) h.on_update(old, obj);
        } else if (h.on_add) {
          h.on_add(obj);
        }
      }
      events_.fetch_add(1);
      break;
    }
    case WatchEventType::kDeleted: {
      ObjectPtr obj = Prepare(std::move(ev.object));
      ObjectPtr old = store_.Delete(ObjectKey(*obj));
      if (old != nullptr) {
        for (auto& h : handlers_) if (h.on_delete) h.on_delete(obj);
      }
      events_.fetch_add(1);
      break;
    }
    case WatchEventType::kError:
      return;
  }
  if (!rv.empty()) {
    std::lock_guard<std::mutex> l(mu_);
    rv_ = std::move(rv);
  }
}

absl::Status Informer::WatchOnce() {
  const int64_t min_s = std::max<int64_t>(1, absl::ToInt64Seconds(options_.min_watch_timeout));
  std::uniform_int_distribution<int64_t> dist(min_s, 2 * min_s);
  WatchOptions wo;
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.resource_version = LastResourceVersion();
  wo.timeout_seconds = dist(rng_);
  wo.allow_bookmarks = true;
  absl::StatusOr<std::unique_ptr<ResponseStream>> stream =
      client_->Watch(resource_, options_.ns, wo);
  if (!stream.ok()) return stream.status();
  watches_.fetch_add(1);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return absl::CancelledError("stopping");
    active_ = stream->get();
  }
  struct Clear {
    Informer* self;
    ~Clear() {
      std::lock_guard<std::mutex> l(self->mu_);
      self->active_ = nullptr;
    }
  } clear{this};

  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  for (;;) {
    absl::StatusOr<std::string> chunk = (*stream)->Read();
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) return absl::OkStatus();  // server closed: timeout reached
    events.clear();
    absl::Status s = decoder.Feed(*chunk, &events);
    for (WatchEvent& ev : events) {
      if (ev.type == WatchEventType::kError) return ev.error;
      Handle(std::move(ev));
    }
    if (!s.ok()) return absl::UnavailableError(absl::StrCat("watch stream: ", s.message()));
  }
}

}  // namespace booster::kube
