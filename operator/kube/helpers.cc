#include "operator/kube/helpers.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace booster::kube {
namespace {

Json& OwnerRefs(Json* obj) {
  Json& md = (*obj)["metadata"];
  if (!md.contains("ownerReferences") || !md["ownerReferences"].is_array()) {
    md["ownerReferences"] = Json::array();
  }
  return md["ownerReferences"];
}

absl::Status OwnerRef(const Json& owner, bool controller, Json* ref) {
  std::string api_version = JsonString(owner, "/apiVersion");
  std::string kind = JsonString(owner, "/kind");
  std::string name = JsonString(owner, "/metadata/name");
  std::string uid = JsonString(owner, "/metadata/uid");
  if (api_version.empty() || kind.empty() || name.empty() || uid.empty()) {
    return absl::InvalidArgumentError("owner needs apiVersion, kind, metadata.name and .uid");
  }
  *ref = {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}};
  if (controller) {
    (*ref)["controller"] = true;
    (*ref)["blockOwnerDeletion"] = true;
  }
  return absl::OkStatus();
}

Json* Finalizers(Json* obj) {
  Json& md = (*obj)["metadata"];
  if (!md.contains("finalizers") || !md["finalizers"].is_array()) md["finalizers"] = Json::array();
  return &md["finalizers"];
}

}  // namespace

absl::Status SetControllerReference(const Json& owner, Json* obj) {
  Json ref;
  if (absl::Status s = OwnerRef(owner, true, &ref); !s.ok()) return s;
  std::string current = ControllerUid(*obj);
  if (!current.empty() && current != ref["uid"].get<std::string>()) {
    return absl::AlreadyExistsError(
        absl::StrCat("object is already controlled by uid ", current));
  }
  Json& refs = OwnerRefs(obj);
  for (Json& r : refs) {
    if (JsonString(r, "/uid") == ref["uid"].get<std::string>()) {
      r = ref;
      return absl::OkStatus();
    }
  }
  refs.push_back(std::move(ref));
  return absl::OkStatus();
}

absl::Status AddOwnerReference(const Json& owner, Json* obj) {
  Json ref;
  if (absl::Status s = OwnerRef(owner, false, &ref); !s.ok()) return s;
  Json& refs = OwnerRefs(obj);
  for (const Json& r : refs) {
    if (JsonString(r, "/uid") == ref["uid"].get<std::string>()) return absl::OkStatus();
  }
  refs.push_back(std::move(ref));
  return absl::OkStatus();
}

bool IsOwnedBy(const Json& obj, absl::string_view owner_uid) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->contains("ownerReferences")) return false;
  const Json& refs = (*md)["ownerReferences"];
  if (!refs.is_array()) return false;
  for (const Json& r : refs) {
    if (JsonString(r, "/uid") == owner_uid) return true;
  }
  return false;
}

std::string ControllerUid(const Json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->contains("ownerReferences")) return "";
  const Json& refs = (*md)["ownerReferences"];
  if (!refs.is_array()) return "";
  for (const Json& r : refs) {
    auto c = r.find("controller");
    if (c != r.end() && c->is_boolean() && c->get<bool>()) return JsonString(r, "/uid");
  }
  return "";
}

bool HasFinalizer(const Json& obj, absl::string_view finalizer) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->contains("finalizers")) return false;
  const Json& f = (*md)["finalizers"];
  if (!f.is_array()) return false;
  for (const Json& x : f) {
    if (x.is_string() && x.get_ref<const std::string&>() == finalizer) return true;
  }
  return false;
}

bool AddFinalizer(Json* obj, absl::string_view finalizer) {
  if (HasFinalizer(*obj, finalizer)) return false;
  Finalizers(obj)->push_back(std::string(finalizer));
  return true;
}

bool RemoveFinalizer(Json* obj, absl::string_view finalizer) {
  if (!HasFinalizer(*obj, finalizer)) return false;
  Json* f = Finalizers(obj);
  Json kept = Json::array();
  for (Json& x : *f) {
    if (!(x.is_string() && x.get_ref<const std::string&>() == finalizer)) {
      kept.push_back(std::move(x));
    }
  }
  *f = std::move(kept);
  return true;
}

bool IsBeingDeleted(const Json& obj) {
  return !JsonString(obj, "/metadata/deletionTimestamp").empty();
}

bool SetCondition(Json* obj, const Condition& c, absl::Time now) {
  Json& status = (*obj)["status"];
  if (!status.is_object()) status = Json::object();
  if (!status.contains("conditions") || !status["conditions"].is_array()) {
    status["conditions"] = Json::array();
  }
  Json& conds = status["conditions"];
  const int64_t generation = Generation(*obj);
  for (Json& existing : conds) {
    if (JsonString(existing, "/type") != c.type) continue;
    bool changed = false;
    if (JsonString(existing, "/status") != c.status) {
      existing["status"] = c.status;
      existing["lastTransitionTime"] = Rfc3339(now);
      changed = true;
    }
    if (JsonString(existing, "/reason") != c.reason) {
      existing["reason"] = c.reason;
      changed = true;
    }
    if (JsonString(existing, "/message") != c.message) {
      existing["message"] = c.message;
      changed = true;
    }
    if (JsonInt(existing, "/observedGeneration", -1) != generation) {
      existing["observedGeneration"] = generation;
      changed = true;
    }
    return changed;
  }
  conds.push_back(Json{{"type", c.type},
                   {"status", c.status},
                   {"reason", c.reason},
                   {"message", c.message},
                   {"lastTransitionTime", Rfc3339(now)},
                   {"observedGeneration", generation}});
  return true;
}

std::optional<Condition> FindCondition(const Json& obj, absl::string_view type) {
  auto st = obj.find("status");
  if (st == obj.end() || !st->is_object() || !st->contains("conditions")) return std::nullopt;
  const Json& conds = (*st)["conditions"];
  if (!conds.is_array()) return std::nullopt;
  for (const Json& c : conds) {
    if (JsonString(c, "/type") == type) {
      return Condition{JsonString(c, "/type"), JsonString(c, "/status"),
                       JsonString(c, "/reason"), JsonString(c, "/message")};
    }
  }
  return std::nullopt;
}

bool IsConditionTrue(const Json& obj, absl::string_view type) {
  std::optional<Condition> c = FindCondition(obj, type);
  return c && c->status == "True";
}

int64_t Generation(const Json& obj) { return JsonInt(obj, "/metadata/generation", 0); }
int64_t ObservedGeneration(const Json& obj) { return JsonInt(obj, "/status/observedGeneration", 0); }

void SetObservedGeneration(Json* obj) {
  Json& status = (*obj)["status"];
  if (!status.is_object()) status = Json::object();
  status["observedGeneration"] = Generation(*obj);
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string Rfc3339Micro(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

bool ParseRfc3339(absl::string_view s, absl::Time* t) {
  std::string err;
  return absl::ParseTime(absl::RFC3339_full, std::string(s), t, &err);
}

}  // namespace booster::kube
