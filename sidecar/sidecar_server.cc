#include "sidecar/sidecar_server.h"

#include <curl/curl.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/accept_backoff.h"
#include "sidecar/client_connection.h"
#include "sidecar/sidecar_log.h"
#include "sidecar/unix_listener.h"

namespace sidecar {
namespace net = boost::asio;
using Protocol = net::local::stream_protocol;

namespace {

void initCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

struct SidecarServer::Impl {
  Impl(SidecarConfig config, HandlerContext handler)
      : state(std::make_shared<ServerState>(std::move(config), std::move(handler))),
        acceptor(ioc) {}

  void doAccept() {
    acceptor.async_accept(net::make_strand(ioc),
                          [this](boost::system::error_code ec, Protocol::socket socket) {
                            if (!acceptor.is_open() || ec == net::error::operation_aborted) return;
                            if (ec) {
                              onAcceptFailed(ec);
                              return;
                            }
                            std::make_shared<ClientConnection>(std::move(socket), state)->start();
                            doAccept();
                          });
  }

  // Out of descriptors, retrying at once fails at once: pause, and log at most every 10 s.
  void onAcceptFailed(const boost::system::error_code& ec) {
    if (common::AcceptBackoff::isTransient(ec.value())) {
      doAccept();
      return;
    }
    if (const auto failures = backoff.onFailure(common::AcceptBackoff::Clock::now())) {
      log().warn(
          "sidecar: accept failed ({} time(s) since the last report): {}; pausing {} ms after "
          "each failure",
          *failures, std::strerror(ec.value()), common::AcceptBackoff::kPause.count());
    }
    accept_pause.expires_after(common::AcceptBackoff::kPause);
    accept_pause.async_wait([this](boost::system::error_code wait_ec) {
      if (wait_ec || !acceptor.is_open()) return;
      doAccept();
    });
  }

  std::vector<std::shared_ptr<ClientConnection>> liveConnections() {
    std::vector<std::shared_ptr<ClientConnection>> live;
    const std::lock_guard lock(state->connections_mutex);
    for (auto& [raw, weak] : state->connections) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
    return live;
  }

  net::io_context ioc{1};
  std::shared_ptr<ServerState> state;
  Protocol::acceptor acceptor;
  net::steady_timer accept_pause{ioc};  // runs on the single I/O thread, like the acceptor
  common::AcceptBackoff backoff;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread io_thread;
  bool started = false;
  bool stopped = false;
};

SidecarServer::SidecarServer(SidecarConfig config, std::shared_ptr<const policy::Policy> policy,
                             std::shared_ptr<AuditLog> audit,
                             const std::shared_ptr<const SecretHeaders>& secrets) {
  initCurlOnce();
  HandlerContext handler;
  handler.policy = std::move(policy);
  handler.audit = std::move(audit);
  // Only the entries the server marked for the relay (both MCP allowlists name their hosts).
  if (secrets) handler.secrets = std::make_shared<const SecretHeaders>(secrets->forRelay());
  if (!config.upstream_ca_file.empty()) {
    handler.upstream_ca = ExtraCaCertificates::load(config.upstream_ca_file);
    log().info("sidecar: trusting {} extra CA certificate(s) from {} for https upstreams",
               handler.upstream_ca->size(), config.upstream_ca_file);
  }
  handler.session_id = config.session_id;
  handler.upstream.connect_timeout_ms = config.upstream_connect_timeout_ms;
  handler.upstream.idle_timeout_ms = config.upstream_idle_timeout_ms;
  handler.upstream.max_header_bytes = config.max_header_bytes;
  handler.denied_endpoints = config.denied_endpoints;
  impl_ = std::make_unique<Impl>(std::move(config), std::move(handler));
}

SidecarServer::~SidecarServer() { stop(); }

const std::string& SidecarServer::socketPath() const noexcept {
  return impl_->state->config.listen_path;
}

void SidecarServer::start() {
  if (impl_->started) throw std::logic_error("SidecarServer::start called twice");
  const std::string& path = socketPath();
  listenOnUnixSocket(impl_->acceptor, path, "--listen", impl_->ioc);
  impl_->started = true;
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->doAccept();
  impl_->io_thread = std::thread([this] { impl_->ioc.run(); });
  log().info("sidecar: listening on {} ({} policy rules)", path,
             impl_->state->handler.policy->rules.size());
}

void SidecarServer::stop() noexcept {
  if (!impl_ || !impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  net::post(impl_->ioc, [this] {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->accept_pause.cancel();
  });
  for (auto& connection : impl_->liveConnections()) connection->close();
  impl_->state->workers.shutdown();  // workers see clientGone and cancel their transfers
  for (auto& connection : impl_->liveConnections()) connection->close();
  impl_->work.reset();
  impl_->ioc.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
  ::unlink(socketPath().c_str());
  log().info("sidecar: stopped, removed {}", socketPath());
}

}  // namespace sidecar
