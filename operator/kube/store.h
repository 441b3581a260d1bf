// Store: the informer's thread-safe cache of objects, keyed "namespace/name" (or "name"
// for cluster-scoped objects), with secondary indexes (client-go's cache.Indexer).
// Objects are immutable once stored (shared_ptr<const Json>): readers keep a consistent
// snapshot and must never modify what they get.
//
// A compact store (StoreOptions::compact, the informer's default) keeps each object as CBOR
// bytes, about a twentieth of the memory of a parsed tree, and decodes it on every read:
// Get/List/ByIndex then return a fresh object per call (decoding a pod costs tens of
// microseconds), so callers that read the same object often should hold on to it.
//
//   Store store;
//   store.AddIndexer(kNamespaceIndex, NamespaceIndexFunc);
//   store.Upsert(std::make_shared<const Json>(pod));
//   for (const ObjectPtr& p : store.ByIndex(kNamespaceIndex, "default")) ...
#ifndef BOOSTER_OPERATOR_KUBE_STORE_H_
#define BOOSTER_OPERATOR_KUBE_STORE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "operator/kube/json.h"

namespace booster::kube {

using ObjectPtr = std::shared_ptr<const Json>;

// "namespace/name", or "name" for cluster-scoped objects.
std::string ObjectKey(const Json& obj);

// Index functions map an object to the index values it is found under.
using IndexFunc = std::function<std::vector<std::string>(const Json&)>;

inline constexpr char kNamespaceIndex[] = "namespace";
inline constexpr char kOwnerIndex[] = "owner";  // by ownerReferences[].uid
inline constexpr char kLabelIndex[] = "label";  // by "key=value"

std::vector<std::string> NamespaceIndexFunc(const Json& obj);
std::vector<std::string> OwnerIndexFunc(const Json& obj);
std::vector<std::string> LabelIndexFunc(const Json& obj);

struct StoreOptions {
  // Keep objects as CBOR bytes and decode them on read (see the file comment).
  bool compact = false;
};

class Store {
 public:
  // The changes Replace() made, for the handlers of an informer.
  struct Delta {
    std::vector<ObjectPtr> added;
    std::vector<std::pair<ObjectPtr, ObjectPtr>> updated;  // (old, new)
    std::vector<ObjectPtr> deleted;
  };

  // What UpsertIfChanged() did.
  struct Upserted {
    ObjectPtr old;        // the previous object for the key, null if none
    bool stored = false;  // false: same resourceVersion as the stored object, left alone
  };

  Store() = default;
  explicit Store(StoreOptions options) : options_(options) {}
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Registers an index; call before objects are added (existing objects are indexed too).
  void AddIndexer(const std::string& name, IndexFunc fn);

  // Inserts or replaces; returns the previous object for the key (null if none).
  ObjectPtr Upsert(ObjectPtr obj);
  // Removes; returns the removed object (null if none).
  ObjectPtr Delete(const std::string& key);
  // Makes the store equal to `items`, returning what changed. An object whose
  // resourceVersion is unchanged is not reported as updated.
  Delta Replace(std::vector<ObjectPtr> items);
  // Replace() one object at a time, for lists too large to hold at once (the informer's
  // relist): UpsertIfChanged() every listed object, then DeleteExcept() the listed keys.
  // An object whose non-empty resourceVersion equals the stored one is not stored again
  // (and in a compact store not decoded).
  Upserted UpsertIfChanged(ObjectPtr obj);
  // Removes every object whose key is not in `keep`; returns them in key order.
  std::vector<ObjectPtr> DeleteExcept(const std::unordered_set<std::string>& keep);

  ObjectPtr Get(const std::string& key) const;
  // metadata.resourceVersion of the object at `key` ("" if absent), without decoding it.
  std::string ResourceVersion(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<std::string> ListKeys() const;
  // Objects whose index `index` contains `value`. Unknown index -> empty.
  std::vector<ObjectPtr> ByIndex(const std::string& index, const std::string& value) const;
  size_t Size() const;
  // Bytes of the stored objects' compact form (0 for a store of trees); for benchmarks.
  size_t CompactBytes() const;
  bool compact() const { return options_.compact; }

 private:
  // A stored object: the tree, or (compact) its CBOR bytes. resourceVersion is kept
  // beside it so that a relist can skip unchanged objects without decoding them.
  // The bytes are shared so that readers can copy them out under the lock and decode
  // after releasing it.
  struct Entry {
    ObjectPtr tree;
    std::shared_ptr<const std::string> cbor;
    std::string resource_version;
  };

  Entry Encode(ObjectPtr obj) const;
  static ObjectPtr Decode(const Entry& e);
  void IndexLocked(const std::string& key, const Json& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnindexLocked(const std::string& key, const Json& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ObjectPtr UpsertLocked(std::string key, ObjectPtr obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ObjectPtr DeleteLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StoreOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> items_ ABSL_GUARDED_BY(mu_);
  size_t compact_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, IndexFunc> indexers_ ABSL_GUARDED_BY(mu_);
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indices_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_STORE_H_
