// Test-only: a throwaway PKI made with the openssl command in a temp dir, for tests that
// run the feedback server (and its client) over real TLS: a CA, a server certificate it
// signed for `service_name` and 127.0.0.1, and an unrelated CA.
//
//   absl::StatusOr<TestPki> pki = MakeTestPki("booster-operator.booster-system.svc");
//   server options: cert_file = pki->server_cert, key_file = pki->server_key
//   client: pem_root_certs = pki->ca_pem
#ifndef BOOSTER_OPERATOR_FEEDBACK_TEST_PKI_H_
#define BOOSTER_OPERATOR_FEEDBACK_TEST_PKI_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace booster::feedback {

struct TestPki {
  std::filesystem::path dir;
  std::string ca_pem;
  std::string other_ca_pem;
  std::filesystem::path server_cert;
  std::filesystem::path server_key;
  std::filesystem::path other_key;
};

// $BOOSTER_OPENSSL names the openssl binary (default: openssl on PATH). On failure the
// status carries openssl's output.
absl::StatusOr<TestPki> MakeTestPki(absl::string_view service_name,
                                    absl::string_view dir_prefix = "feedback-test");

std::string ReadTestFile(const std::filesystem::path& p);

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_TEST_PKI_H_
