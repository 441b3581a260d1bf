#include "operator/feedback/leader_endpoint.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace booster::feedback {

absl::Status ParseServiceRef(absl::string_view ref, std::string* ns, std::string* name) {
  const size_t slash = ref.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == ref.size() ||
      ref.find('/', slash + 1) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--feedback-service must be NAMESPACE/NAME (e.g. booster-system/booster-operator-feedback), "
        "not \"", ref, "\""));
  }
  *ns = std::string(ref.substr(0, slash));
  *name = std::string(ref.substr(slash + 1));
  return absl::OkStatus();
}

kube::Json LeaderEndpointSlice(const LeaderEndpoint& e) {
  return kube::Json{
      {"apiVersion", "discovery.k8s.io/v1"},
      {"kind", "EndpointSlice"},
      {"metadata",
       {{"name", e.service},
        {"namespace", e.ns},
        {"labels",
         {{"kubernetes.io/service-name", e.service},
          {"endpointslice.kubernetes.io/managed-by", "booster-operator"}}}}},
      {"addressType", absl::StrContains(e.ip, ':') ? "IPv6" : "IPv4"},
      {"endpoints", kube::Json::array({{{"addresses", kube::Json::array({e.ip})},
                                       {"conditions", {{"ready", true}}},
                                       {"targetRef",
                                        {{"kind", "Pod"}, {"namespace", e.ns}, {"name", e.pod}}}}})},
      {"ports", kube::Json::array(
                    {{{"name", e.port_name}, {"port", e.port}, {"protocol", "TCP"}}})}};
}

absl::Status PublishLeaderEndpoint(kube::Client& client, const LeaderEndpoint& e) {
  if (e.ip.empty() || e.service.empty() || e.ns.empty()) {
    return absl::InvalidArgumentError(
        "the leader's endpoint needs the Service (--feedback-service) and the pod's IP (POD_IP)");
  }
  kube::Json want = LeaderEndpointSlice(e);
  absl::StatusOr<kube::Json> have = client.Get(kEndpointSlices, e.ns, e.service);
  if (!have.ok()) {
    if (!absl::IsNotFound(have.status())) return have.status();
    absl::StatusOr<kube::Json> created = client.Create(kEndpointSlices, e.ns, want);
    return created.status();
  }
  const bool same = have->value("addressType", "") == want["addressType"] &&
                    have->value("endpoints", kube::Json()) == want["endpoints"] &&
                    have->value("ports", kube::Json()) == want["ports"] &&
                    have->value("/metadata/labels"_json_pointer, kube::Json()) ==
                        want["metadata"]["labels"];
  if (same) return absl::OkStatus();
  want["metadata"]["resourceVersion"] =
      have->value("/metadata/resourceVersion"_json_pointer, std::string());
  absl::StatusOr<kube::Json> updated = client.Update(kEndpointSlices, e.ns, want);
  return updated.status();
}

}  // namespace booster::feedback
