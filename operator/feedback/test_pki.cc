#include "operator/feedback/test_pki.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace booster::feedback {
namespace fs = std::filesystem;

std::string ReadTestFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
bool Run(const std::string& cmd, const fs::path& log) {
  const std::string full = absl::StrCat(cmd, " >>'", log.string(), "' 2>&1");
  return std::system(full.c_str()) == 0;
}
}  // namespace

absl::StatusOr<TestPki> MakeTestPki(absl::string_view service_name,
                                    absl::string_view dir_prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", dir_prefix, "-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  TestPki pki;
  pki.dir = templ;
  const char* env = getenv("BOOSTER_OPENSSL");
  const std::string openssl = env != nullptr ? env : "openssl";
  const fs::path log = pki.dir / "openssl.log";
  const std::string d = absl::StrCat("'", pki.dir.string(), "'/");
  std::ofstream(pki.dir / "ext") << "subjectAltName=DNS:" << service_name
                                 << ",IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                    "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n";
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const bool ok =
      Run(absl::StrCat(openssl, " req -x509 ", ec, " -days 1 -subj /CN=booster-test-ca -keyout ", d,
                       "ca.key -out ", d, "ca.crt"),
          log) &&
      Run(absl::StrCat(openssl, " req -x509 ", ec, " -days 1 -subj /CN=other-ca -keyout ", d,
                       "other.key -out ", d, "other.crt"),
          log) &&
      Run(absl::StrCat(openssl, " req ", ec, " -subj /CN=booster-operator -keyout ", d,
                       "server.key -out ", d, "server.csr"),
          log) &&
      Run(absl::StrCat(openssl, " x509 -req -in ", d, "server.csr -CA ", d, "ca.crt -CAkey ", d,
                       "ca.key -CAcreateserial -days 1 -extfile ", d, "ext -out ", d, "server.crt"),
          log);
  if (!ok) return absl::InternalError(absl::StrCat("openssl failed:\n", ReadTestFile(log)));
  pki.ca_pem = ReadTestFile(pki.dir / "ca.crt");
  pki.other_ca_pem = ReadTestFile(pki.dir / "other.crt");
  pki.server_cert = pki.dir / "server.crt";
  pki.server_key = pki.dir / "server.key";
  pki.other_key = pki.dir / "other.key";
  return pki;
}

}  // namespace booster::feedback
