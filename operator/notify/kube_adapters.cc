#include "operator/notify/kube_adapters.h"

#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "operator/kube/cpprest_transport.h"

namespace booster::notify {

absl::StatusOr<std::pair<std::string, std::string>> SplitUrl(const std::string& raw) {
  const std::string url(absl::StripAsciiWhitespace(raw));
  size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return absl::InvalidArgumentError("the webhook URL is not an http:// or https:// URL");
  }
  const size_t host_start = scheme_end + 3;
  size_t path_start = url.find_first_of("/?", host_start);
  if (path_start == std::string::npos) path_start = url.size();
  if (path_start == host_start) {
    return absl::InvalidArgumentError("the webhook URL has no host");
  }
  std::string rest = url.substr(path_start);
  if (rest.empty() || rest[0] == '?') rest = "/" + rest;
  return std::make_pair(url.substr(0, path_start), rest);
}

absl::StatusOr<PostAnswer> HttpPoster::Post(const std::string& url, const std::string& body) {
  absl::StatusOr<std::pair<std::string, std::string>> parts = SplitUrl(url);
  if (!parts.ok()) return parts.status();
  const auto& [origin, path] = *parts;
  auto hide = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrReplaceAll(s.message(), {{path, "/..."}}));
  };
  absl::StatusOr<std::unique_ptr<kube::Transport>> t =
      kube::NewCpprestWebTransport(origin, timeout_);
  if (!t.ok()) return hide(t.status());
  kube::HttpRequest req;
  req.method = "POST";
  req.path = path;
  req.headers = {{"Content-Type", "application/json"}, {"User-Agent", "booster-operator/0.1"}};
  req.body = body;
  req.timeout = timeout_;
  absl::StatusOr<kube::HttpResponse> r = (*t)->Send(req);
  if (!r.ok()) return hide(r.status());
  return PostAnswer{r->status, r->retry_after, r->body};
}

absl::StatusOr<std::string> KubeSecretReader::Read(const std::string& ns, const std::string& name,
                                                   const std::string& key) {
  absl::StatusOr<kube::Json> secret = client_->Get(kSecrets, ns, name);
  if (!secret.ok()) {
    return absl::Status(secret.status().code(),
                        absl::StrCat("Secret ", ns, "/", name, ": ", secret.status().message()));
  }
  const kube::Json data = secret->value("data", kube::Json::object());
  auto it = data.find(key);
  if (it == data.end() || !it->is_string()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Secret ", ns, "/", name, " has no key \"", key, "\""));
  }
  std::string decoded;
  if (!absl::Base64Unescape(it->get<std::string>(), &decoded)) {
    return absl::FailedPreconditionError(
        absl::StrCat("Secret ", ns, "/", name, " key \"", key, "\" is not base64"));
  }
  return std::string(absl::StripAsciiWhitespace(decoded));
}

}  // namespace booster::notify
