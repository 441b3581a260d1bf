// Store: the informer's thread-safe cache of objects, keyed "namespace/name" (or "name"
// for cluster-scoped objects), with secondary indexes (client-go's cache.Indexer).
// Objects are immutable once stored (shared_ptr<const Json>): readers keep a consistent
// snapshot without copying and must never modify what they get.
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

class Store {
 public:
  // The changes Replace() made, for the handlers of an informer.
  struct Delta {
    std::vector<ObjectPtr> added;
    std::vector<std::pair<ObjectPtr, ObjectPtr>> updated;  // (old, new)
    std::vector<ObjectPtr> deleted;
  };

  Store() = default;
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

  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<std::string> ListKeys() const;
  // Objects whose index `index` contains `value`. Unknown index -> empty.
  std::vector<ObjectPtr> ByIndex(const std::string& index, const std::string& value) const;
  size_t Size() const;

 private:
  void IndexLocked(const std::string& key, const Json& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnindexLocked(const std::string& key, const Json& obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ObjectPtr UpsertLocked(ObjectPtr obj) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ObjectPtr DeleteLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable std::mutex mu_;
  std::unordered_map<std::string, ObjectPtr> items_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, IndexFunc> indexers_ ABSL_GUARDED_BY(mu_);
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indices_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_STORE_H_
