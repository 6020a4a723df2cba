// TLS interception of one allowed CONNECT tunnel whose host gets secret headers
// (secret_headers.h): instead of passing TLS through (tunnel.h), the sidecar
//  1. ends the sandbox's TLS itself, with a leaf certificate for the CONNECT host from the
//     session CA (session_ca.h; ALPN: http/1.1 only, TLS 1.2+). The ClientHello the proxy already
//     read (to check its SNI) is handed to OpenSSL first through asio's buffered handshake
//     (ssl::stream::async_handshake with a buffer sequence: the bytes enter the engine's input
//     before anything is read from the socket), so no wrapper stream or memory BIO is needed;
//  2. opens TLS to the upstream on the connection the proxy pinned and connected: peer verified
//     against the system CA store (plus an optional extra CA file), SNI = host, the certificate
//     checked for the host (name or IP; no partial wildcards), TLS 1.2+, ALPN http/1.1. A failure
//     answers the sandbox `502` with the reason, then closes;
//  3. relays HTTP/1.1 requests one at a time (keep-alive both ways; one upstream connection):
//     each request head is read (at most max_header_bytes, else 431), must be origin-form
//     ("/path", or "*"), gets Host set to the CONNECT host, loses hop-by-hop and Proxy-* fields,
//     and has every configured header set (any field of the same name the sandbox sent is
//     removed first, case-insensitively); its body, and then the answer's, stream through a
//     64 KiB buffer (Content-Length, chunked, or until close; HEAD, 1xx, 204 and 304 without a
//     body). `Expect: 100-continue` is answered by the sidecar and not forwarded.
// Ends on the sandbox closing between requests, the upstream closing between requests or sending
// bytes nobody asked for (the sandbox's connection is then closed too, so its client reconnects
// rather than reading a 502 on its next request), a TRACE or TRACK (403: its answer would echo
// the secret headers), `Connection: close` either way, an answer
// delimited by closing, idle time (no byte either way, handshakes included), max_duration, the
// byte budget spent, or an error; `done` runs once, on the io_context's thread, with the counts
// and why. Secret values are never logged, never in `end`, and never in an answer to the sandbox.
// Thread-safety: everything runs on the sockets' io_context (one thread); InterceptTls is
// immutable after construction and may be shared by every intercepted tunnel of a session.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sidecar/secret_headers.h"
#include "sidecar/session_ca.h"
#include "sidecar/tunnel.h"

namespace sidecar {

inline constexpr const char* kSystemCaFile = "/etc/ssl/certs/ca-certificates.crt";

// The TLS settings of a session's intercepted tunnels.
class InterceptTls {
 public:
  // Throws std::runtime_error naming a CA file that cannot be loaded. An empty
  // `upstream_ca_file` (a system without a CA bundle): only the extra file is trusted.
  explicit InterceptTls(std::shared_ptr<SessionCa> ca,
                        const std::string& extra_upstream_ca_file = "",
                        const std::string& upstream_ca_file = kSystemCaFile);
  InterceptTls(const InterceptTls&) = delete;
  InterceptTls& operator=(const InterceptTls&) = delete;

  [[nodiscard]] SessionCa& ca() const noexcept { return *ca_; }
  [[nodiscard]] boost::asio::ssl::context& sandboxSide() noexcept { return sandbox_side_; }
  [[nodiscard]] boost::asio::ssl::context& upstreamSide() noexcept { return upstream_side_; }

 private:
  std::shared_ptr<SessionCa> ca_;
  boost::asio::ssl::context sandbox_side_;
  boost::asio::ssl::context upstream_side_;
};

struct InterceptLimits {
  std::chrono::milliseconds idle{120'000};
  std::chrono::milliseconds max_duration{std::chrono::hours(24)};  // then it ends ("time")
  // Bytes the session's egress may still move, shared with its other tunnels; charged as HTTP
  // bytes are written either way (TLS framing not counted), a body read never asking for more
  // than is left; spent: it ends ("limit"). None: unbounded.
  std::shared_ptr<TunnelBudget> budget;
  std::size_t max_header_bytes = std::size_t{16} * 1024;           // a request head
  std::size_t max_response_header_bytes = std::size_t{64} * 1024;  // an answer's head
};

struct InterceptTarget {
  std::string host;  // canonical CONNECT host (IPv6 without brackets): SNI, certificate, Host
  std::uint16_t port = 443;
};

struct InterceptResult {
  std::uint64_t up = 0;    // HTTP bytes (heads and bodies as framed) written to the upstream
  std::uint64_t down = 0;  // HTTP bytes written to the sandbox
  unsigned requests = 0;   // requests forwarded
  unsigned status = 0;     // the last status the sandbox got (the sidecar's own 502/431 included)
  std::string end;  // "closed", "idle", "time", "limit", or why it ended (never a header value)
  // Why the interception refused a request of the sandbox's (4xx: TRACE, framing, a head too
  // large, another target), or empty: the proxy records the connection as a refusal then.
  std::string refusal;
};

// Starts intercepting: `sandbox` just got `200 Connection established` and sent `client_hello`
// (read by the proxy, not yet seen by OpenSSL); `upstream` is connected to the pinned address.
void startIntercept(TunnelSocket sandbox, std::string client_hello, TunnelSocket upstream,
                    InterceptTarget target, std::vector<SecretHeader> headers,
                    std::shared_ptr<InterceptTls> tls, InterceptLimits limits,
                    std::function<void(const InterceptResult&)> done);

}  // namespace sidecar
