// EngineClient's connections to a tcp:// engine: TCP with keepalive, then TLS 1.2 or later. The
// engine's certificate must chain to docker.tls.ca_file and be issued for the host docker.host
// names: a DNS name or IP address subjectAltName, whole wildcard labels only (*.example.com, not
// f*.example.com), never the subject's common name; this client presents docker.tls.cert_file
// with its key. Errors say which file or name to check.
// TCP keepalive probes an idle connection after 30 s, every 10 s, and drops it after 3 unanswered
// probes: an engine that vanishes without closing (host down, network cut) ends an attach stream
// (which has no deadline of its own) within about a minute instead of the kernel's default two
// hours. That holds while the engine has acknowledged all we sent; bytes it never acknowledged
// are retransmitted until the kernel gives up (net.ipv4.tcp_retries2: about 15 minutes).
// TlsContext is immutable after construction and shared by every connection (thread-safe);
// a TlsConnection is used by one thread at a time.
#pragma once

#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>
#include <string>

#include "sandbox/docker/engine_connection.h"

namespace sandbox::docker::detail {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

inline constexpr int kKeepaliveIdleS = 30;      // TCP_KEEPIDLE
inline constexpr int kKeepaliveIntervalS = 10;  // TCP_KEEPINTVL
inline constexpr int kKeepaliveProbes = 3;      // TCP_KEEPCNT

// Whether `certificate` is issued for `host` (a DNS name or an IP address) by a subjectAltName,
// as described above. Pure; exposed for tests.
[[nodiscard]] bool certificateNamesHost(X509* certificate, const std::string& host) noexcept;

class TlsContext {
 public:
  // Loads and checks the three files. Throws SandboxError naming the file that failed.
  explicit TlsContext(const EngineTlsFiles& files);

  [[nodiscard]] net::ssl::context& native() noexcept { return context_; }
  [[nodiscard]] const EngineTlsFiles& files() const noexcept { return files_; }

 private:
  EngineTlsFiles files_;
  net::ssl::context context_{net::ssl::context::tls_client};
};

class TlsConnection final : public BeastConnection<TlsStream> {
 public:
  // Resolves, connects and completes the handshake within `timeout`. Throws EngineError
  // (status 0) saying why not.
  TlsConnection(const common::EngineHost& endpoint, TlsContext& context,
                std::chrono::milliseconds timeout);

  [[nodiscard]] std::string describe(const beast::error_code& ec) const override;

  // For the pump (tls_pump.h), which takes the connection over after the 101 reply.
  [[nodiscard]] net::io_context& context() noexcept { return ioc_; }
  [[nodiscard]] TlsStream& stream() noexcept { return stream_; }

 protected:
  UpgradedConnection detachSelf(std::unique_ptr<EngineConnection> self) override;

 private:
  std::string uri_;
  const EngineTlsFiles& files_;
  std::string verify_failure_;  // why the engine's certificate was rejected, if it was
};

}  // namespace sandbox::docker::detail
