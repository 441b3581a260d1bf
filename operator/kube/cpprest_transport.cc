#include "operator/kube/cpprest_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ssl.hpp>
#include <cpprest/http_client.h>
#include <pplx/pplxtasks.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace booster::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;

// Builds the TLS context setup shared by every connection. Throws (boost::system) on
// malformed PEM, which NewCpprestTransport turns into a status once, up front.
std::function<void(boost::asio::ssl::context&)> TlsSetup(const Config& config) {
  std::string ca = config.ca_pem;
  std::string cert = config.client_cert_pem;
  std::string key = config.client_key_pem;
  return [ca, cert, key](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) {
      // Trust the cluster CA only: replace the store cpprestsdk filled with system roots.
      SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
      ctx.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
    }
    if (!cert.empty()) {
      ctx.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()));
      ctx.use_private_key(boost::asio::buffer(key.data(), key.size()),
                          boost::asio::ssl::context::pem);
    }
  };
}

absl::Status FromException(const Config& config, const HttpRequest& req, const char* what) {
  std::string msg = absl::StrCat(req.method, " ", config.server, req.path, ": ", what);
  if (absl::StrContains(what, "handshake") || absl::StrContains(what, "certificate")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TLS verification of ", config.server,
        " failed (is certificate-authority the cluster's CA, and does the server certificate "
        "name this host?): ",
        msg));
  }
  if (absl::StrContains(what, "canceled") || absl::StrContains(what, "cancelled")) {
    return absl::CancelledError(msg);
  }
  return absl::UnavailableError(msg);
}

http::http_request BuildRequest(const HttpRequest& req) {
  http::http_request r(req.method);
  r.set_request_uri(web::uri(req.path));
  std::string content_type = "application/json";
  for (const auto& [k, v] : req.headers) {
    if (absl::EqualsIgnoreCase(k, "Content-Type")) {
      content_type = v;
    } else {
      r.headers().add(k, v);
    }
  }
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" ||
      req.method == "PATCH") {
    std::vector<unsigned char> bytes(req.body.begin(), req.body.end());
    r.set_body(std::move(bytes));
    r.headers().set_content_type(content_type);
  }
  return r;
}

std::string RetryAfterHeader(const http::http_response& resp) {
  auto it = resp.headers().find("Retry-After");
  return it == resp.headers().end() ? std::string() : it->second;
}

class CpprestStream final : public ResponseStream {
 public:
  CpprestStream(std::unique_ptr<client::http_client> http, http::http_response resp,
                pplx::cancellation_token_source cts)
      : http_(std::move(http)), resp_(std::move(resp)), body_(resp_.body()),
        cts_(std::move(cts)) {}

  ~CpprestStream() override {
    Cancel();
    try {
      body_.close().wait();
    } catch (...) {
    }
  }

  absl::StatusOr<std::string> Read() override {
    if (cts_.get_token().is_canceled()) return absl::CancelledError("watch cancelled");
    try {
      auto buf = body_.streambuf();
      size_t want = std::max<size_t>(1, std::min<size_t>(buf.in_avail(), 1 << 20));
      std::string out(want, '\0');
      size_t n = buf.getn(reinterpret_cast<uint8_t*>(out.data()), want).get();
      if (cts_.get_token().is_canceled()) return absl::CancelledError("watch cancelled");
      out.resize(n);
      return out;
    } catch (const std::exception& e) {
      if (cts_.get_token().is_canceled()) return absl::CancelledError("watch cancelled");
      return absl::UnavailableError(absl::StrCat("watch stream: ", e.what()));
    }
  }

  void Cancel() override { cts_.cancel(); }

 private:
  std::unique_ptr<client::http_client> http_;  // keeps the connection alive
  http::http_response resp_;
  concurrency::streams::istream body_;
  pplx::cancellation_token_source cts_;
};

class CpprestTransport final : public Transport {
 public:
  explicit CpprestTransport(const Config& config) : config_(config) {
    unary_ = std::make_unique<client::http_client>(web::uri(config.server),
                                                   ClientConfig(config.request_timeout));
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& req) override {
    try {
      http::http_request r = BuildRequest(req);
      pplx::cancellation_token_source cts;
      // A request bounded tighter than the configured timeout (a caller's RequestDeadline,
      // such as the leader's renew deadline) gets a client of its own with that timeout:
      // the shared one's is fixed when it is built. That is a new connection (and TLS
      // handshake) per such request, which only the leader's renewals make (one every 2 s),
      // and a renewal then never waits on a pooled connection the network dropped.
      std::unique_ptr<client::http_client> bounded;
      if (req.timeout > absl::ZeroDuration() && req.timeout < config_.request_timeout) {
        bounded = std::make_unique<client::http_client>(web::uri(config_.server),
                                                        ClientConfig(req.timeout));
      }
      client::http_client& http = bounded ? *bounded : *unary_;
      http::http_response resp = http.request(r, cts.get_token()).get();
      HttpResponse out;
      out.status = resp.status_code();
      out.retry_after = RetryAfterHeader(resp);
      std::vector<unsigned char> body = resp.extract_vector().get();
      out.body.assign(body.begin(), body.end());
      return out;
    } catch (const std::exception& e) {
      return FromException(config_, req, e.what());
    }
  }

  absl::StatusOr<StreamResponse> Stream(const HttpRequest& req) override {
    try {
      // One connection per stream: a watch holds its connection for minutes.
      auto http = std::make_unique<client::http_client>(web::uri(config_.server),
                                                        ClientConfig(req.timeout));
      http::http_request r = BuildRequest(req);
      pplx::cancellation_token_source cts;
      http::http_response resp = http->request(r, cts.get_token()).get();
      StreamResponse out;
      out.status = resp.status_code();
      out.retry_after = RetryAfterHeader(resp);
      if (out.status < 200 || out.status >= 300) {
        std::vector<unsigned char> body = resp.extract_vector().get();
        out.error_body.assign(body.begin(), body.end());
        return out;
      }
      out.stream = std::make_unique<CpprestStream>(std::move(http), std::move(resp), cts);
      return out;
    } catch (const std::exception& e) {
      return FromException(config_, req, e.what());
    }
  }

 private:
  client::http_client_config ClientConfig(absl::Duration timeout) const {
    client::http_client_config c;
    c.set_validate_certificates(true);
    c.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
    c.set_ssl_context_callback(TlsSetup(config_));
    return c;
  }

  const Config config_;
  std::unique_ptr<client::http_client> unary_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> NewCpprestTransport(const Config& config) {
  if (!absl::StartsWith(config.server, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("server \"", config.server, "\" is not https; TLS is required"));
  }
  if (!config.tls_server_name.empty()) {
    return absl::UnimplementedError("tls-server-name is not supported by this transport");
  }
  try {
    boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
    TlsSetup(config)(ctx);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS material for ", config.server, " is invalid (CA, client certificate "
                     "or key not PEM, or key not matching the certificate): ", e.what()));
  }
  try {
    return std::unique_ptr<Transport>(std::make_unique<CpprestTransport>(config));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("server ", config.server, ": ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<Transport>> NewCpprestWebTransport(const std::string& origin,
                                                                  absl::Duration timeout,
                                                                  const std::string& ca_pem) {
  if (!absl::StartsWith(origin, "https://") && !absl::StartsWith(origin, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", origin, "\" is not an http:// or https:// address"));
  }
  Config config;
  config.server = origin;
  config.request_timeout = timeout;
  config.ca_pem = ca_pem;
  if (!ca_pem.empty()) {
    try {
      boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
      TlsSetup(config)(ctx);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("the CA for ", origin, " is not PEM: ", e.what()));
    }
  }
  try {
    return std::unique_ptr<Transport>(std::make_unique<CpprestTransport>(config));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("address ", origin, ": ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<Client>> NewClient(const Config& config, Clock* clock) {
  absl::StatusOr<std::unique_ptr<Transport>> t = NewCpprestTransport(config);
  if (!t.ok()) return t.status();
  return std::make_unique<Client>(config, *std::move(t), clock);
}

}  // namespace booster::kube
