#include "sidecar/egress_proxy.h"

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/accept_backoff.h"
#include "sidecar/egress_ca_files.h"
#include "sidecar/egress_connection.h"
#include "sidecar/session_ca.h"
#include "sidecar/sidecar_log.h"
#include "sidecar/unix_listener.h"

namespace sidecar {
namespace net = boost::asio;
using Protocol = net::local::stream_protocol;

namespace {

// Connections past --egress-max-connections still accepted, so that they read their 503.
constexpr std::size_t kWaitingForHeadAllowance = 16;

EgressLimits limitsFrom(const SidecarConfig& config) {
  EgressLimits limits;
  limits.max_connections = config.egress_max_connections;
  limits.max_bytes = config.egress_max_bytes;
  limits.idle = std::chrono::milliseconds(config.egress_idle_timeout_ms);
  limits.max_connection = std::chrono::milliseconds(config.egress_max_connection_ms);
  limits.connect_timeout = std::chrono::milliseconds(config.upstream_connect_timeout_ms);
  limits.head_timeout = std::chrono::milliseconds(config.idle_timeout_ms);
  limits.max_header_bytes = config.max_header_bytes;
  return limits;
}

}  // namespace

struct EgressProxy::Impl {
  Impl(const SidecarConfig& config, std::shared_ptr<const policy::EgressPolicy> rules,
       std::shared_ptr<AuditLog> audit, std::shared_ptr<const SecretHeaders> secrets_)
      : path(config.egress_listen_path),
        upstream_ca_file(config.egress_upstream_ca_file),
        secrets(std::move(secrets_)),
        shared(std::make_shared<EgressShared>(ioc, std::move(rules), std::move(audit),
                                              config.denied_endpoints, config.session_id,
                                              limitsFrom(config))) {}

  // The session CA, in memory only, limited to the secret hosts; its certificate written next
  // to the socket for the sandbox. Before the socket listens, so the files exist when the
  // sandbox can connect.
  void prepareIntercept() {
    if (!secrets) return;
    // Secrets for MCP servers only (the relay sets those) neither widen the CA nor get
    // intercepted: the same rule the server applies before it tells the sandbox to trust the CA.
    secrets = std::make_shared<const SecretHeaders>(secrets->reachableThrough(*shared->rules));
    if (secrets->hosts.empty()) {
      log().info("egress: no secret host is reachable through the proxy; nothing is intercepted");
      return;
    }
    const std::string name =
        "sandbox-mcp session" + (shared->session.empty() ? "" : " " + shared->session);
    const CaPem pem = SessionCa::generateCa(name, secrets->hostNames());
    std::shared_ptr<SessionCa> ca = SessionCa::fromPem(pem.cert_pem, pem.key_pem);
    const std::string system_bundle = findSystemCaBundle();
    if (system_bundle.empty()) {
      log().warn(
          "egress: no system CA bundle (/etc/ssl/certs/ca-certificates.crt, "
          "/etc/pki/tls/certs/ca-bundle.crt): {} holds the session CA only, and intercepted "
          "upstreams are verified against {} alone",
          kCaBundleFileName, upstream_ca_file.empty() ? "nothing" : upstream_ca_file);
    }
    shared->intercept_tls = std::make_shared<InterceptTls>(ca, upstream_ca_file, system_bundle);
    shared->secrets = secrets;
    const std::string dir = std::filesystem::path(path).parent_path().string();
    ca_files = writeEgressCaFiles(dir.empty() ? "." : dir, pem.cert_pem, system_bundle);
    log().info("egress: intercepting for secret headers: {}; session CA in {}", secrets->toString(),
               ca_files.front());
  }

  void doAccept() {
    acceptor.async_accept([this](boost::system::error_code ec, Protocol::socket socket) {
      if (!acceptor.is_open() || ec == net::error::operation_aborted) return;
      if (ec) return onAcceptFailed(ec);
      if (shared->open >= shared->limits.max_connections + kWaitingForHeadAllowance) {
        dropUnread(socket);
      } else {
        std::make_shared<EgressConnection>(std::move(socket), shared)->start();
      }
      doAccept();
    });
  }

  // The connection limit is checked at a connection's head (a 503 the client can read), but
  // connections that never send one count too: past the limit and an allowance for those, a new
  // connection is closed unread, so code cannot hold thousands of sockets with a head buffer each
  // (a relay out of memory would restart with a fresh byte budget). Logged at most every 10 s.
  void dropUnread(Protocol::socket& socket) {
    boost::system::error_code ignored;
    socket.close(ignored);
    // The accept loop's rate limit for its log lines serves here too: a count every 10 s.
    const auto count = drop_reports.onFailure(common::AcceptBackoff::Clock::now());
    if (!count) return;
    log().warn(
        "egress: {} connection(s) closed unread since the last report: {} open, past the "
        "session's {} connections (--egress-max-connections) and {} more waiting for a head",
        *count, shared->open, shared->limits.max_connections, kWaitingForHeadAllowance);
  }

  // Out of descriptors, retrying at once fails at once: pause, and log at most every 10 s.
  void onAcceptFailed(const boost::system::error_code& ec) {
    if (common::AcceptBackoff::isTransient(ec.value())) return doAccept();
    if (const auto failures = backoff.onFailure(common::AcceptBackoff::Clock::now())) {
      log().warn("egress: accept failed ({} time(s) since the last report): {}", *failures,
                 std::strerror(ec.value()));
    }
    accept_pause.expires_after(common::AcceptBackoff::kPause);
    accept_pause.async_wait([this](boost::system::error_code wait_ec) {
      if (wait_ec || !acceptor.is_open()) return;
      doAccept();
    });
  }

  // On the io thread: no more connections, and every open one cut.
  void closeAll() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    accept_pause.cancel();
    std::vector<std::shared_ptr<EgressConnection>> open;
    for (auto& [raw, weak] : shared->live) {
      if (auto connection = weak.lock()) open.push_back(std::move(connection));
    }
    for (auto& connection : open) connection->close();
  }

  const std::string path;
  const std::string upstream_ca_file;
  std::shared_ptr<const SecretHeaders> secrets;  // those the rules reach, after prepareIntercept
  std::vector<std::string> ca_files;             // written by prepareIntercept, removed by stop()
  net::io_context ioc{1};
  std::shared_ptr<EgressShared> shared;
  Protocol::acceptor acceptor{ioc};
  net::steady_timer accept_pause{ioc};
  common::AcceptBackoff backoff;
  common::AcceptBackoff drop_reports;  // only its log-line rate limit
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread io_thread;
  bool started = false;
  bool stopped = false;
};

EgressProxy::EgressProxy(const SidecarConfig& config,
                         std::shared_ptr<const policy::EgressPolicy> rules,
                         std::shared_ptr<AuditLog> audit,
                         std::shared_ptr<const SecretHeaders> secrets)
    : impl_(
          std::make_unique<Impl>(config, std::move(rules), std::move(audit), std::move(secrets))) {}

EgressProxy::~EgressProxy() { stop(); }

void EgressProxy::start() {
  if (impl_->started) throw std::logic_error("EgressProxy::start called twice");
  impl_->prepareIntercept();
  try {
    listenOnUnixSocket(impl_->acceptor, impl_->path, "--egress-listen", impl_->ioc);
  } catch (...) {
    removeEgressCaFiles(impl_->ca_files);
    throw;
  }
  impl_->started = true;
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->doAccept();
  impl_->io_thread = std::thread([this] { impl_->ioc.run(); });
  log().info("egress: proxy listening on {} ({} rules)", impl_->path,
             impl_->shared->rules->rules.size());
}

void EgressProxy::stop() noexcept {
  if (!impl_ || !impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  std::promise<void> closed;
  net::post(impl_->ioc, [this, &closed] {
    impl_->closeAll();
    closed.set_value();
  });
  closed.get_future().wait_for(std::chrono::seconds(5));
  impl_->shared->resolvers.shutdown();  // lookups under way finish; their answers find it closed
  impl_->work.reset();
  // Tunnels still relaying end with the io_context: its destruction destroys their handlers,
  // and with them their sockets.
  impl_->ioc.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
  ::unlink(impl_->path.c_str());
  removeEgressCaFiles(impl_->ca_files);
  log().info("egress: stopped, removed {}", impl_->path);
}

}  // namespace sidecar
