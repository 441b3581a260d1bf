// The dispatcher's two seams on the real thing: webhook POSTs over the Kubernetes client's
// HTTP transport (cpprestsdk, operator/kube/cpprest_transport.h) and webhook URLs read
// from Secrets through the Kubernetes API. Neither repeats a URL's path in an error: the
// path of a Slack or Teams webhook is its secret.
//
//   HttpPoster poster;
//   KubeSecretReader secrets(&client);
//   Dispatcher d(&poster, &secrets, &clock, &observer);
#ifndef BOOSTER_OPERATOR_NOTIFY_KUBE_ADAPTERS_H_
#define BOOSTER_OPERATOR_NOTIFY_KUBE_ADAPTERS_H_

#include <string>

#include "absl/time/time.h"
#include "operator/kube/client.h"
#include "operator/notify/dispatcher.h"

namespace booster::notify {

// Splits "https://host:port/path?q" into origin ("https://host:port") and the rest
// ("/path?q", "/" when empty). InvalidArgument for anything but an http(s) URL with a host.
absl::StatusOr<std::pair<std::string, std::string>> SplitUrl(const std::string& url);

class HttpPoster final : public Poster {
 public:
  explicit HttpPoster(absl::Duration timeout = absl::Seconds(10)) : timeout_(timeout) {}
  absl::StatusOr<PostAnswer> Post(const std::string& url, const std::string& body) override;

 private:
  const absl::Duration timeout_;
};

inline const kube::Resource kSecrets{"", "v1", "secrets", true};

class KubeSecretReader final : public SecretReader {
 public:
  explicit KubeSecretReader(kube::Client* client) : client_(client) {}  // not owned
  absl::StatusOr<std::string> Read(const std::string& ns, const std::string& name,
                                   const std::string& key) override;

 private:
  kube::Client* const client_;
};

}  // namespace booster::notify

#endif  // BOOSTER_OPERATOR_NOTIFY_KUBE_ADAPTERS_H_
