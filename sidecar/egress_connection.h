// One connection to the egress proxy, from its request head to the end of its relay (see
// egress_proxy.h for what it allows), and the state the proxy's connections share.
// Thread-safety: everything runs on the proxy's single io_context thread, except the DNS lookup,
// which runs on a resolver worker and posts its answer back.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/worker_pool.h"
#include "policy/egress.h"
#include "sidecar/audit_log.h"
#include "sidecar/dns_pinning.h"
#include "sidecar/proxy_request.h"
#include "sidecar/secret_headers.h"
#include "sidecar/tls_intercept.h"
#include "sidecar/tunnel.h"

namespace sidecar {

class EgressConnection;

struct EgressLimits {
  std::size_t max_connections = 64;
  std::uint64_t max_bytes = std::uint64_t{8} << 30;  // all connections together, both ways
  std::chrono::milliseconds idle{120'000};
  std::chrono::milliseconds max_connection{3'600'000};
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds head_timeout{30'000};  // the request head, then the ClientHello
  std::size_t max_header_bytes = std::size_t{16} * 1024;
};

struct EgressShared {
  EgressShared(boost::asio::io_context& io, std::shared_ptr<const policy::EgressPolicy> rules_,
               std::shared_ptr<AuditLog> audit_, std::vector<policy::Endpoint> denied_,
               std::string session_, EgressLimits limits_);

  boost::asio::io_context& ioc;
  const std::shared_ptr<const policy::EgressPolicy> rules;
  const std::shared_ptr<AuditLog> audit;
  const std::vector<policy::Endpoint> denied;  // the MCP server's own listeners
  const std::string session;
  const EgressLimits limits;
  common::WorkerPool resolvers;  // getaddrinfo blocks: never on the io thread
  // Set before the proxy accepts, read-only after: the hosts whose CONNECTs are intercepted,
  // and the TLS settings for it (both null: nothing is intercepted).
  std::shared_ptr<const SecretHeaders> secrets;
  std::shared_ptr<InterceptTls> intercept_tls;

  // io thread only
  std::size_t open = 0;
  std::shared_ptr<TunnelBudget> bytes_left;  // of limits.max_bytes, for all connections
  std::unordered_map<EgressConnection*, std::weak_ptr<EgressConnection>> live;
};

class EgressConnection : public std::enable_shared_from_this<EgressConnection> {
 public:
  using UnixSocket = boost::asio::local::stream_protocol::socket;

  EgressConnection(UnixSocket sandbox, std::shared_ptr<EgressShared> shared);
  ~EgressConnection();
  EgressConnection(const EgressConnection&) = delete;
  EgressConnection& operator=(const EgressConnection&) = delete;

  void start();
  void close();  // io thread: cut it, whatever it is doing (recorded as "error")

 private:
  void onHead(const boost::system::error_code& ec);
  void onPinned(const PinnedAddress& pinned);
  void onConnected(const boost::system::error_code& ec);
  void readHello();
  void onHello();
  void forwardPlainRequest();
  void relay(std::string first_up, std::uint64_t max_up);
  void intercept(const SecretHost& secret);

  // Answers `status` with `reason` (reason phrase and body), then closes; one audit line.
  void refuse(unsigned status, const std::string& reason, const char* decision = "deny");
  void lingerThenClose();
  // Past `after`, the connection ends: with a 504 saying `what`, or closed when an answer
  // (CONNECT's 200) was already sent.
  void armDeadline(std::chrono::milliseconds after, std::string what, bool answered = false);
  void record(const char* decision, const std::string& reason, unsigned status,
              std::uint64_t up = 0, std::uint64_t down = 0);
  void closeSockets();

  UnixSocket sandbox_;
  std::shared_ptr<EgressShared> shared_;
  boost::asio::ip::tcp::socket upstream_;
  boost::asio::steady_timer deadline_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::empty_body>> parser_;
  ProxyRequest request_;
  std::string method_;
  std::string target_text_;  // as the sandbox sent it, for the audit line of a refusal
  std::string pinned_address_;
  std::string hello_;
  std::array<char, 4096> scratch_{};
  const std::chrono::system_clock::time_point arrived_ = std::chrono::system_clock::now();
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool recorded_ = false;
  bool relaying_ = false;
};

}  // namespace sidecar
