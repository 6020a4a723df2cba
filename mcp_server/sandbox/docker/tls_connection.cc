#include "sandbox/docker/tls_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>

#include "sandbox/docker/tls_pump.h"
#include "sandbox/log.h"

namespace sandbox::docker::detail {
namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

void requireReadable(const std::string& path, const char* field) {
  if (path.empty()) {
    throw SandboxError(std::string("docker.tls.") + field +
                       " is required for a tcp:// engine: the engine is reached over TLS with a "
                       "client certificate, never without");
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw SandboxError(std::string("cannot read docker.tls.") + field + " " + path +
                       ": check the path and that the server may read it");
  }
}

void check(const boost::system::error_code& ec, const char* field, const std::string& path) {
  if (ec) {
    throw SandboxError(std::string("cannot use docker.tls.") + field + " " + path + ": " +
                       ec.message() + " (expected a PEM file)");
  }
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  (void)net::ip::make_address(host, ec);
  return !ec;
}

// X509_check_host's defaults (flags 0, as boost::asio::ssl::host_name_verification passes)
// accept f*.example.com and fall back to the subject's CN when no DNS subjectAltName is present.
constexpr unsigned kHostCheckFlags =
    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT;

// Keepalive on the engine's TCP socket (see the header). Returns what failed, or "" when all did.
std::string enableKeepalive(net::ip::tcp::socket& socket) {
  const int fd = socket.native_handle();
  const std::pair<int, int> options[] = {{SOL_SOCKET, SO_KEEPALIVE},
                                         {IPPROTO_TCP, TCP_KEEPIDLE},
                                         {IPPROTO_TCP, TCP_KEEPINTVL},
                                         {IPPROTO_TCP, TCP_KEEPCNT}};
  const int values[] = {1, kKeepaliveIdleS, kKeepaliveIntervalS, kKeepaliveProbes};
  for (std::size_t i = 0; i < std::size(values); ++i) {
    const auto [level, name] = options[i];
    if (::setsockopt(fd, level, name, &values[i], sizeof(values[i])) != 0) {
      return "setsockopt " + std::to_string(name) + ": " + std::strerror(errno);
    }
  }
  return "";
}

}  // namespace

bool certificateNamesHost(X509* certificate, const std::string& host) noexcept {
  if (certificate == nullptr || host.empty()) return false;
  if (isIpAddress(host)) return X509_check_ip_asc(certificate, host.c_str(), kHostCheckFlags) == 1;
  return X509_check_host(certificate, host.data(), host.size(), kHostCheckFlags, nullptr) == 1;
}

TlsContext::TlsContext(const EngineTlsFiles& files) : files_(files) {
  requireReadable(files_.ca_file, "ca_file");
  requireReadable(files_.cert_file, "cert_file");
  requireReadable(files_.key_file, "key_file");
  SSL_CTX* native = context_.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  context_.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_compression);
  boost::system::error_code ec;
  // Only this CA: the system's trust store is never consulted for the engine.
  context_.load_verify_file(files_.ca_file, ec);
  check(ec, "ca_file", files_.ca_file);
  context_.use_certificate_chain_file(files_.cert_file, ec);
  check(ec, "cert_file", files_.cert_file);
  context_.use_private_key_file(files_.key_file, net::ssl::context::pem, ec);
  // OpenSSL checks the key against the certificate as it loads it ("key values mismatch").
  const bool mismatch =
      ec ? contains(ec.message(), "mismatch") : SSL_CTX_check_private_key(native) != 1;
  if (mismatch) {
    throw SandboxError("docker.tls.key_file " + files_.key_file +
                       " is not the private key of docker.tls.cert_file " + files_.cert_file);
  }
  check(ec, "key_file", files_.key_file);
  context_.set_verify_mode(net::ssl::verify_peer);
}

TlsConnection::TlsConnection(const common::EngineHost& endpoint, TlsContext& context,
                             std::chrono::milliseconds timeout)
    : BeastConnection<TlsStream>(context.native()), uri_(endpoint.uri()), files_(context.files()) {
  auto& tcp = beast::get_lowest_layer(stream_);
  tcp.expires_after(timeout);
  // Resolved synchronously: asio's asynchronous resolver keeps a thread per io_context, that is
  // per pooled connection (and its deadline could not stop getaddrinfo anyway).
  net::ip::tcp::resolver resolver(ioc_);
  const auto flags = isIpAddress(endpoint.host) ? net::ip::resolver_base::numeric_host
                                                : net::ip::resolver_base::flags();
  beast::error_code ec;
  const auto endpoints = resolver.resolve(endpoint.host, std::to_string(endpoint.port), flags, ec);
  if (!ec) ec = run([&](auto handler) { tcp.async_connect(endpoints, handler); });
  if (ec) {
    throw EngineError(0, "cannot connect to " + uri_ + ": " + ec.message(), "connect");
  }
  if (const auto failed = enableKeepalive(tcp.socket()); !failed.empty()) {
    logger().warn("engine {}: no TCP keepalive ({}): a vanished engine is noticed late", uri_,
                  failed);
  }

  SSL* ssl = stream_.native_handle();
  if (!isIpAddress(endpoint.host)) {
    // SNI: SSL_set_tlsext_host_name without its C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(endpoint.host.c_str()));
  }
  stream_.set_verify_callback(
      [this, host = endpoint.host](bool preverified, net::ssl::verify_context& verify) {
        X509_STORE_CTX* store = verify.native_handle();
        if (!preverified) {
          verify_failure_ = "the engine's certificate does not verify against docker.tls.ca_file " +
                            files_.ca_file + " (" +
                            X509_verify_cert_error_string(X509_STORE_CTX_get_error(store)) +
                            "): ca_file must be the CA that signed dockerd's --tlscert";
          return false;
        }
        if (X509_STORE_CTX_get_error_depth(store) > 0) return true;  // a CA of the chain
        if (!certificateNamesHost(X509_STORE_CTX_get_current_cert(store), host)) {
          verify_failure_ = "the engine's certificate is not issued for '" + host +
                            "' (no subjectAltName matches that name or address; the subject's "
                            "common name and partial wildcards such as f*.example.com do not "
                            "count): set docker.host to a name or address the certificate lists, "
                            "or reissue it with that subjectAltName";
          return false;
        }
        return true;
      });
  ec = run([&](auto handler) { stream_.async_handshake(net::ssl::stream_base::client, handler); });
  if (ec) {
    throw EngineError(0, "TLS handshake with " + uri_ + " failed: " + describe(ec), "connect");
  }
}

std::string TlsConnection::describe(const beast::error_code& ec) const {
  if (!verify_failure_.empty()) return verify_failure_;
  std::string reason = ec.message();
  if (ec.category() == net::error::get_ssl_category()) {
    // With TLS 1.3 the engine judges our certificate after our side of the handshake is done:
    // its verdict arrives as an alert on the first read.
    if (contains(reason, "alert") &&
        (contains(reason, "certificate") || contains(reason, "unknown ca") ||
         contains(reason, "decrypt error") || contains(reason, "access denied"))) {
      return "the engine at " + uri_ + " refused this client's TLS certificate (" + reason +
             "). dockerd's --tlscacert must be the CA that signed docker.tls.cert_file " +
             files_.cert_file;
    }
    if (contains(reason, "wrong version number") || contains(reason, "packet length")) {
      return "the engine at " + uri_ + " does not speak TLS on that port (" + reason +
             "): start dockerd with --tlsverify --tlscacert --tlscert --tlskey";
    }
    return "TLS error with the engine at " + uri_ + ": " + reason;
  }
  const bool closed = ec == net::ssl::error::stream_truncated || ec == net::error::eof ||
                      ec == net::error::connection_reset || ec == net::error::broken_pipe ||
                      ec == http::error::end_of_stream;
  if (closed && !answered_) {
    // Under TLS 1.3 dockerd --tlsverify checks our certificate after the handshake has ended on
    // our side, and refuses it by closing the connection before it answers anything.
    return "the engine at " + uri_ + " closed the connection before answering (" + reason +
           "): it refused this client's TLS certificate. dockerd's --tlscacert must be the CA "
           "that signed docker.tls.cert_file " +
           files_.cert_file;
  }
  if (closed) return "the engine at " + uri_ + " closed the TLS connection (" + reason + ")";
  return reason;
}

UpgradedConnection TlsConnection::detachSelf(std::unique_ptr<EngineConnection> self) {
  beast::get_lowest_layer(stream_).expires_never();
  UpgradedConnection out;
  out.buffered = takeBuffered();
  std::unique_ptr<TlsConnection> owned(static_cast<TlsConnection*>(self.release()));
  auto ends = socketPair();
  out.fd = std::move(ends.first);
  out.pump = startTlsPump(std::move(owned), std::move(ends.second));
  return out;
}

}  // namespace sandbox::docker::detail
