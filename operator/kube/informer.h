// Informer: client-go's reflector + shared informer for one resource. Lists (paged), then
// watches from the list's resourceVersion with bookmarks and a watch timeout randomised in
// [min_watch_timeout, 2 * min_watch_timeout]; on 410 Gone it relists and emits delete
// events for objects that vanished meanwhile, adds and updates for the rest; other errors
// back off exponentially (800 ms -> 30 s). Objects pass through an optional transform
// (by default dropping metadata.managedFields) before they are cached in a Store, by
// default a compact one (CBOR bytes per object, decoded on read; see store.h).
//
// Like client-go's reflector, the first list asks for resourceVersion=0, which the API
// server answers from its watch cache in one piece; the relist after a 410 is a consistent
// (quorum) read. A list is handled one item at a time as it is parsed: each item updates
// the store and reaches the handlers (add, or update if its resourceVersion changed) in
// list order, then objects the list no longer holds are deleted (delete events). A list
// that fails midway leaves the items before the failure applied; the retry completes it.
//
//   Informer pods(&client, kPods, {.ns = "default"});
//   pods.AddEventHandler({.on_add = [&](const ObjectPtr& p) { queue.Add(ObjectKey(*p)); }});
//   pods.Start();
//   pods.WaitForSync(absl::Seconds(30));
//   ObjectPtr web = pods.store().Get("default/web-0");
#ifndef BOOSTER_OPERATOR_KUBE_INFORMER_H_
#define BOOSTER_OPERATOR_KUBE_INFORMER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/client.h"
#include "operator/kube/store.h"
#include "operator/kube/transport.h"
#include "operator/kube/watch_decoder.h"

namespace booster::kube {

// Handlers run on the informer's own thread, one event at a time, after the store has
// been updated; they must not block for long (queue a key and return).
struct EventHandlers {
  std::function<void(const ObjectPtr& obj)> on_add;
  std::function<void(const ObjectPtr& old_obj, const ObjectPtr& new_obj)> on_update;
  std::function<void(const ObjectPtr& obj)> on_delete;
};

// Edits an object in place before it is cached.
using TransformFunc = std::function<void(Json* obj)>;

// Removes metadata.managedFields, the bulk of most objects and useless to controllers.
void DropManagedFields(Json* obj);

struct InformerOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  absl::Duration min_watch_timeout = absl::Minutes(5);
  absl::Duration backoff_initial = absl::Milliseconds(800);
  absl::Duration backoff_max = absl::Seconds(30);
  TransformFunc transform = DropManagedFields;
  // Cache objects as CBOR bytes (about a twentieth of the memory of parsed trees); reads
  // decode them, so store().Get() returns a fresh object per call.
  bool compact_cache = true;
  // First list (not a relist after 410) with resourceVersion=0, as client-go does: served
  // from the API server's watch cache, possibly a little stale, much cheaper for the
  // server than paging through etcd. false: every list is a consistent read, paged.
  bool list_from_watch_cache = true;
  // After each list, hand the heap memory the list's parsing freed back to the OS
  // (glibc malloc_trim), so a long-lived operator's resident size follows its cache.
  bool trim_after_list = true;
  bool index_namespace = true;  // add kNamespaceIndex
  bool index_owner = true;      // add kOwnerIndex
  bool index_labels = false;    // add kLabelIndex
  uint64_t seed = 0;            // 0 = random
};

class Informer {
 public:
  // `client` and `clock` are not owned and must outlive the informer.
  Informer(Client* client, Resource resource, InformerOptions options = {},
           Clock* clock = &RealClock::Get());
  ~Informer();

  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Register before Start().
  void AddEventHandler(EventHandlers handlers);

  // Warm restart: seeds the cache with objects saved earlier and the resourceVersion they
  // were current at, so Start() watches from there instead of listing. If that version has
  // been compacted away the server answers 410 and the informer relists, emitting deletes
  // for saved objects that no longer exist. Call before Start(); handlers see the seeded
  // objects as adds.
  void Resume(std::vector<Json> items, std::string resource_version);

  void Start();
  // Cancels the watch and joins the thread. Idempotent.
  void Stop();

  // True once the first list has been stored and its events delivered.
  bool HasSynced() const;
  // Waits (real time) until synced or stopped; false on timeout.
  bool WaitForSync(absl::Duration timeout);

  Store& store() { return store_; }
  const Resource& resource() const { return resource_; }

  // Counters, for tests and benchmarks.
  std::string LastResourceVersion() const;
  int64_t Relists() const { return relists_.load(); }
  int64_t Watches() const { return watches_.load(); }
  int64_t EventsHandled() const { return events_.load(); }

 private:
  void Run();
  // consistent: a quorum read (after 410), not resourceVersion=0.
  absl::Status ListAndReplace(bool consistent);
  absl::Status WatchOnce();
  void Handle(WatchEvent ev);
  // Sleeps on the clock but wakes early on Stop(). Returns false if stopping.
  bool Sleep(absl::Duration d);
  bool Stopping() const;
  ObjectPtr Prepare(Json obj);

  Client* const client_;
  const Resource resource_;
  const InformerOptions options_;
  Clock* const clock_;
  Store store_;
  std::vector<EventHandlers> handlers_;
  std::mt19937_64 rng_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::string rv_ ABSL_GUARDED_BY(mu_);
  bool resumed_ = false;
  ResponseStream* active_ ABSL_GUARDED_BY(mu_) = nullptr;  // owned by WatchOnce

  std::atomic<int64_t> relists_{0};
  std::atomic<int64_t> watches_{0};
  std::atomic<int64_t> events_{0};
  std::thread thread_;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_INFORMER_H_
