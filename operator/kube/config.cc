#include "operator/kube/config.h"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace booster::kube {
namespace {

std::string ResolvePath(absl::string_view base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/' || base_dir.empty()) return p;
  return absl::StrCat(base_dir, "/", p);
}

// Finds the entry named `name` in a kubeconfig list (clusters/users/contexts) and
// returns its `field` map.
std::optional<YAML::Node> FindNamed(const YAML::Node& list, const std::string& name,
                                    const char* field) {
  if (!list || !list.IsSequence()) return std::nullopt;
  for (const YAML::Node& item : list) {
    if (item["name"] && item["name"].IsScalar() && item["name"].as<std::string>() == name) {
      return item[field];
    }
  }
  return std::nullopt;
}

std::string Str(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap() || !n[key] || !n[key].IsScalar()) return "";
  return n[key].as<std::string>();
}

// Either inline base64 data (`data_key`) or a file (`file_key`).
absl::StatusOr<std::string> DataOrFile(const YAML::Node& n, const char* data_key,
                                       const char* file_key, absl::string_view base_dir) {
  std::string data = Str(n, data_key);
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", data_key, " is not base64"));
    }
    return decoded;
  }
  std::string file = Str(n, file_key);
  if (file.empty()) return std::string();
  absl::StatusOr<std::string> content = ReadFileToString(ResolvePath(base_dir, file));
  if (!content.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: ", file_key, ": ", content.status().message()));
  }
  return content;
}

absl::StatusOr<Config> ParseKubeconfigOrThrow(absl::string_view yaml, absl::string_view base_dir,
                                              absl::string_view context_name) {
  YAML::Node root = YAML::Load(std::string(yaml));
  if (!root || !root.IsMap()) return absl::InvalidArgumentError("kubeconfig: not a YAML map");
  std::string ctx_name(context_name);
  if (ctx_name.empty()) ctx_name = Str(root, "current-context");
  if (ctx_name.empty()) return absl::InvalidArgumentError("kubeconfig: no current-context");
  std::optional<YAML::Node> ctx_entry = FindNamed(root["contexts"], ctx_name, "context");
  if (!ctx_entry) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: context \"", ctx_name,
                                                   "\" not found"));
  }
  const YAML::Node ctx = *ctx_entry;
  const std::string cluster_name = Str(ctx, "cluster");
  const std::string user_name = Str(ctx, "user");
  std::optional<YAML::Node> cluster_entry = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster_entry) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: cluster \"", cluster_name,
                                                   "\" not found"));
  }
  const YAML::Node cluster = *cluster_entry;
  Config c;
  const std::string server = Str(cluster, "server");
  if (server.empty()) return absl::InvalidArgumentError("kubeconfig: cluster has no server");
  if (!absl::StartsWith(server, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: server \"", server, "\" is not https; TLS is required"));
  }
  // Request paths are appended to the server: every trailing slash goes ("https://h:6443//"
  // would otherwise send "//api/...").
  absl::string_view base = server;
  while (absl::ConsumeSuffix(&base, "/")) {
  }
  if (base.size() <= absl::string_view("https://").size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: server \"", server, "\" has no host"));
  }
  c.server = std::string(base);
  if (Str(cluster, "insecure-skip-tls-verify") == "true") {
    return absl::InvalidArgumentError(
        "kubeconfig: insecure-skip-tls-verify is set; this client always verifies TLS");
  }
  c.tls_server_name = Str(cluster, "tls-server-name");
  absl::StatusOr<std::string> ca =
      DataOrFile(cluster, "certificate-authority-data", "certificate-authority", base_dir);
  if (!ca.ok()) return ca.status();
  c.ca_pem = *std::move(ca);
  std::string ns = Str(ctx, "namespace");
  if (!ns.empty()) c.default_namespace = ns;

  if (!user_name.empty()) {
    std::optional<YAML::Node> user_entry = FindNamed(root["users"], user_name, "user");
    if (!user_entry) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig: user \"", user_name,
                                                     "\" not found"));
    }
    const YAML::Node user = *user_entry;
    absl::StatusOr<std::string> cert =
        DataOrFile(user, "client-certificate-data", "client-certificate", base_dir);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = DataOrFile(user, "client-key-data", "client-key", base_dir);
    if (!key.ok()) return key.status();
    if (cert->empty() != key->empty()) {
      return absl::InvalidArgumentError("kubeconfig: client certificate and key must come together");
    }
    c.client_cert_pem = *std::move(cert);
    c.client_key_pem = *std::move(key);
    c.token = Str(user, "token");
    std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty()) c.token_file = ResolvePath(base_dir, token_file);
    if (user["exec"] || user["auth-provider"]) {
      return absl::UnimplementedError(
          "kubeconfig: exec and auth-provider credentials are not supported");
    }
  }
  return c;
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrCat("error reading ", path));
  return ss.str();
}

absl::StatusOr<Config> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                       absl::string_view context) {
  try {
    return ParseKubeconfigOrThrow(yaml, base_dir, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", e.what()));
  }
}

absl::StatusOr<Config> LoadKubeconfig(const std::string& path, absl::string_view context) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) dir = path.substr(0, slash == 0 ? 1 : slash);
  absl::StatusOr<Config> c = ParseKubeconfig(*text, dir, context);
  if (!c.ok()) {
    return absl::Status(c.status().code(), absl::StrCat(path, ": ", c.status().message()));
  }
  return c;
}

absl::StatusOr<Config> InClusterConfig(const EnvFunc& getenv, const std::string& sa_dir) {
  std::string host = getenv("KUBERNETES_SERVICE_HOST");
  std::string port = getenv("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  Config c;
  if (host.find(':') != std::string::npos) host = absl::StrCat("[", host, "]");  // IPv6
  c.server = absl::StrCat("https://", host, ":", port);
  absl::StatusOr<std::string> ca = ReadFileToString(sa_dir + "/ca.crt");
  if (!ca.ok()) return ca.status();
  c.ca_pem = *std::move(ca);
  c.token_file = sa_dir + "/token";
  absl::StatusOr<std::string> ns = ReadFileToString(sa_dir + "/namespace");
  if (ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    c.default_namespace = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return c;
}

absl::StatusOr<Config> LoadDefaultConfig() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v == nullptr ? "" : v;
  };
  std::string kubeconfig = env("KUBECONFIG");
  if (!kubeconfig.empty()) {
    // Only the first entry of a colon-separated list is used (no merging).
    return LoadKubeconfig(kubeconfig.substr(0, kubeconfig.find(':')));
  }
  if (!env("KUBERNETES_SERVICE_HOST").empty()) return InClusterConfig(env);
  std::string home = env("HOME");
  if (home.empty()) return absl::NotFoundError("no KUBECONFIG, not in a cluster, and no HOME");
  return LoadKubeconfig(home + "/.kube/config");
}

TokenSource::TokenSource(const Config& config, Clock* clock)
    : static_token_(config.token), file_(config.token_file), refresh_(config.token_refresh),
      clock_(clock) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (file_.empty()) return static_token_;
  std::lock_guard<std::mutex> l(mu_);
  const absl::Time now = clock_->Now();
  if (now - read_at_ < refresh_) return cached_;
  absl::StatusOr<std::string> content = ReadFileToString(file_);
  std::string token =
      content.ok() ? std::string(absl::StripAsciiWhitespace(*content)) : std::string();
  if (token.empty()) {
    if (!cached_.empty()) return cached_;  // keep the last good token; retry next call
    if (!static_token_.empty()) return static_token_;
    return content.ok() ? absl::UnauthenticatedError(absl::StrCat("token file ", file_, " is empty"))
                        : content.status();
  }
  cached_ = std::move(token);
  read_at_ = now;
  return cached_;
}

}  // namespace booster::kube
