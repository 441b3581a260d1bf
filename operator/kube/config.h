// Connection settings of the Kubernetes client, read from a kubeconfig (yaml-cpp is used
// here and nowhere else) or from the in-cluster service-account environment, plus the
// TokenSource that re-reads a token file so rotated service-account tokens are picked up.
// TLS is always verified: a kubeconfig asking for insecure-skip-tls-verify is rejected.
//
//   absl::StatusOr<Config> config = LoadDefaultConfig();   // $KUBECONFIG, in-cluster, ~/.kube
//   TokenSource tokens(*config, &RealClock::Get());
#ifndef BOOSTER_OPERATOR_KUBE_CONFIG_H_
#define BOOSTER_OPERATOR_KUBE_CONFIG_H_

#include <functional>
#include <mutex>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace booster::kube {

struct Config {
  std::string server;           // "https://host:port", no trailing slash
  std::string ca_pem;           // the cluster CA; the only root trusted when set
  std::string client_cert_pem;  // client certificate (with key) for mTLS, optional
  std::string client_key_pem;
  std::string token;            // static bearer token, optional
  std::string token_file;       // bearer token file, re-read every `token_refresh`
  std::string tls_server_name;  // overrides the name checked against the certificate
  std::string default_namespace = "default";
  absl::Duration token_refresh = absl::Minutes(1);
  // Client-side rate limit of the REST client (controller-runtime defaults); qps <= 0
  // disables it.
  double qps = 20;
  int burst = 30;
  absl::Duration request_timeout = absl::Seconds(30);
  // Retries of a request answered 429 or 5xx-with-Retry-After.
  int max_retries = 5;
  std::string user_agent = "booster-operator/0.1";
};

// Parses kubeconfig YAML. Relative file paths are resolved against `base_dir`. An empty
// `context` means current-context.
absl::StatusOr<Config> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                       absl::string_view context = "");
absl::StatusOr<Config> LoadKubeconfig(const std::string& path, absl::string_view context = "");

// In-cluster: KUBERNETES_SERVICE_HOST/PORT from `getenv`, CA, token file and namespace
// from `sa_dir` (normally /var/run/secrets/kubernetes.io/serviceaccount).
using EnvFunc = std::function<std::string(const char* name)>;
absl::StatusOr<Config> InClusterConfig(
    const EnvFunc& getenv,
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// $KUBECONFIG if set, else in-cluster if KUBERNETES_SERVICE_HOST is set, else
// ~/.kube/config.
absl::StatusOr<Config> LoadDefaultConfig();

absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Supplies the bearer token: the static token, or the token file's content re-read once
// it is older than config.token_refresh. If a re-read fails, the last good token is kept
// (the kubelet rewrites the file atomically, so failures are transient). Thread-safe.
class TokenSource {
 public:
  TokenSource(const Config& config, Clock* clock);
  // "" when the config has no token at all.
  absl::StatusOr<std::string> Token();

 private:
  const std::string static_token_;
  const std::string file_;
  const absl::Duration refresh_;
  Clock* const clock_;
  std::mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  absl::Time read_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_CONFIG_H_
