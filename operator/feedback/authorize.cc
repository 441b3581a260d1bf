#include "operator/feedback/authorize.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace booster::feedback {
namespace {

// The single non-empty value of extra[key], or "" when absent, empty or ambiguous.
std::string SingleExtra(const TokenReviewResult& review, const char* key) {
  auto it = review.extra.find(key);
  if (it == review.extra.end() || it->second.size() != 1) return "";
  return it->second.front();
}

std::string Get(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

}  // namespace

absl::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kMissingToken:
      return "missing_token";
    case RejectReason::kTokenReviewUnavailable:
      return "tokenreview_unavailable";
    case RejectReason::kUnauthenticated:
      return "unauthenticated";
    case RejectReason::kWrongAudience:
      return "wrong_audience";
    case RejectReason::kNotServiceAccount:
      return "not_service_account";
    case RejectReason::kNotPodBound:
      return "not_pod_bound";
    case RejectReason::kPodNotFound:
      return "pod_not_found";
    case RejectReason::kPodUidMismatch:
      return "pod_uid_mismatch";
    case RejectReason::kNotEnrolled:
      return "not_enrolled";
  }
  return "unknown";
}

AuthDecision AuthDecision::Accept(AgentIdentity identity) {
  AuthDecision d;
  d.identity = std::move(identity);
  return d;
}

AuthDecision AuthDecision::Reject(RejectReason reason, std::string detail) {
  AuthDecision d;
  d.reason = reason;
  d.detail = std::move(detail);
  return d;
}

std::optional<std::pair<std::string, std::string>> ParseServiceAccountUsername(
    absl::string_view username) {
  std::vector<absl::string_view> parts = absl::StrSplit(username, ':');
  if (parts.size() != 4 || parts[0] != "system" || parts[1] != "serviceaccount" ||
      parts[2].empty() || parts[3].empty()) {
    return std::nullopt;
  }
  return std::make_pair(std::string(parts[2]), std::string(parts[3]));
}

AuthDecision Authorize(const TokenReviewResult& review, const PodLookup& pods,
                       absl::string_view audience) {
  using R = RejectReason;
  if (!review.authenticated) {
    return AuthDecision::Reject(
        R::kUnauthenticated,
        review.error.empty()
            ? "the API server did not authenticate the token"
            : absl::StrCat("the API server did not authenticate the token: ", review.error));
  }
  if (std::find(review.audiences.begin(), review.audiences.end(), audience) ==
      review.audiences.end()) {
    return AuthDecision::Reject(
        R::kWrongAudience,
        absl::StrCat("the token is not valid for audience \"", audience,
                     "\" (mount a projected service-account token with that audience)"));
  }
  std::optional<std::pair<std::string, std::string>> sa =
      ParseServiceAccountUsername(review.username);
  if (!sa) {
    return AuthDecision::Reject(R::kNotServiceAccount, absl::StrCat("user \"", review.username,
                                                                    "\" is not a service account"));
  }
  const std::string pod_name = SingleExtra(review, kExtraPodName);
  const std::string pod_uid = SingleExtra(review, kExtraPodUid);
  if (pod_name.empty() || pod_uid.empty()) {
    return AuthDecision::Reject(
        R::kNotPodBound,
        absl::StrCat("the token of ", review.username,
                     " is not bound to a pod (use a projected service-account token)"));
  }
  const std::string& ns = sa->first;
  std::optional<PodInfo> pod = pods.Find(ns, pod_name);
  if (!pod) {
    return AuthDecision::Reject(R::kPodNotFound, absl::StrCat("no live pod ", ns, "/", pod_name));
  }
  if (pod->phase == "Succeeded" || pod->phase == "Failed") {
    return AuthDecision::Reject(
        R::kPodNotFound,
        absl::StrCat("pod ", ns, "/", pod_name, " has terminated (phase ", pod->phase, ")"));
  }
  if (pod->uid != pod_uid) {
    return AuthDecision::Reject(
        R::kPodUidMismatch,
        absl::StrCat("the token belongs to pod ", ns, "/", pod_name, " uid ", pod_uid,
                     ", the live pod of that name has uid ", pod->uid));
  }
  const OwnerRef* controller = nullptr;
  for (const OwnerRef& o : pod->owners) {
    if (o.controller) controller = &o;
  }
  if (controller == nullptr || controller->kind != "ReplicaSet") {
    return AuthDecision::Reject(
        R::kNotEnrolled,
        absl::StrCat("pod ", ns, "/", pod_name, " is not controlled by a ReplicaSet"));
  }
  const std::string arm_label = Get(pod->labels, kArmLabel);
  std::optional<Arm> arm = ParseArm(arm_label);
  if (!arm) {
    return AuthDecision::Reject(
        R::kNotEnrolled, absl::StrCat("pod ", ns, "/", pod_name, " has label ", kArmLabel, "=\"",
                                      arm_label, "\", not baseline or canary"));
  }
  const std::string profile = Get(pod->annotations, kProfileAnnotation);
  std::vector<absl::string_view> profile_parts = absl::StrSplit(profile, '/');
  if (profile_parts.size() != 2 || profile_parts[0].empty() || profile_parts[1].empty()) {
    return AuthDecision::Reject(
        R::kNotEnrolled,
        absl::StrCat("pod ", ns, "/", pod_name, " has annotation ", kProfileAnnotation, "=\"",
                     profile, "\", not \"<namespace>/<name>\""));
  }
  // A profile and its target live in one namespace: a pod pointing elsewhere would feed
  // another namespace's analysis.
  if (profile_parts[0] != ns) {
    return AuthDecision::Reject(R::kNotEnrolled,
                                absl::StrCat("pod ", ns, "/", pod_name, " names profile ", profile,
                                             " of another namespace"));
  }

  AgentIdentity id;
  id.pod_namespace = ns;
  id.pod_name = pod->name;
  id.pod_uid = pod->uid;
  id.service_account = sa->second;
  id.arm = *arm;
  id.profile = profile;
  id.owner = controller->name;
  id.template_hash = Get(pod->annotations, kTemplateHashAnnotation);
  id.pod_created = pod->created;
  id.node = pod->node;
  return AuthDecision::Accept(std::move(id));
}

}  // namespace booster::feedback
