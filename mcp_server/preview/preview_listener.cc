#include "preview/preview_listener.h"

#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <stdexcept>
#include <vector>

namespace preview {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// Opens at once: each may wait for a restore from disk (about a second), so a few run side by
// side; more wait their turn.
constexpr std::size_t kOpenerThreads = 4;

}  // namespace

struct PreviewListener::IoState {
  net::io_context io{1};
  net::thread_pool openers{kOpenerThreads};
  tcp::acceptor acceptor{io};
  net::steady_timer retry{io};  // after a failed accept
  // preview.max_connections, in all and per address alike (browsers on one host share theirs).
  std::shared_ptr<transport::ConnectionLimiter> limiter;
  // Keeps the I/O thread running until the opens under way have posted their results.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> busy;
  // Every connection, to close them at stop (weak: a connection lives as long as its work).
  std::vector<std::weak_ptr<PreviewConnection>> connections;
};

PreviewListener::PreviewListener(const config::PreviewConfig& config,
                                 server::SessionRegistry& sessions)
    : config_(config), sessions_(sessions), io_(std::make_unique<IoState>()) {
  const auto bound = static_cast<std::size_t>(config.max_connections);
  io_->limiter = std::make_shared<transport::ConnectionLimiter>(bound, bound);
  context_.reset(new PreviewContext{config,
                                    sessions,
                                    PreviewGate(config, sessions.previews()),
                                    {},
                                    io_->io,
                                    io_->openers,
                                    {},
                                    {false}});
}

PreviewListener::~PreviewListener() { stop(); }

std::string PreviewListener::urlPattern(const config::PreviewConfig& config, std::uint16_t port) {
  if (!config.public_url.empty()) return config.public_url;
  return "http://{label}." + config.domain + ":" + std::to_string(port) + "/";
}

void PreviewListener::start() {
  const auto colon = config_.listen.rfind(':');
  std::string host = config_.listen.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const auto port = static_cast<std::uint16_t>(std::stoi(config_.listen.substr(colon + 1)));
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) throw std::runtime_error("preview.listen " + config_.listen + ": not an IP address");
  const tcp::endpoint endpoint(address, port);
  auto& acceptor = io_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on preview.listen " + config_.listen + ": " +
                             ec.message());
  }
  port_ = acceptor.local_endpoint().port();
  sessions_.previews().setUrlPattern(urlPattern(config_, port_));
  accept();
  io_->busy.emplace(io_->io.get_executor());
  thread_ = std::thread([this] { io_->io.run(); });
  spdlog::info("previews: serving exposed ports at {} (listening on {}:{})",
               urlPattern(config_, port_), address.to_string(), port_);
}

void PreviewListener::accept() {
  io_->acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !io_->acceptor.is_open()) return;
    if (!ec) {
      boost::system::error_code peer_error;
      const auto peer = socket.remote_endpoint(peer_error);
      const std::string address = peer_error ? "?" : peer.address().to_string();
      auto connection = std::make_shared<PreviewConnection>(*context_, std::move(socket));
      std::erase_if(io_->connections, [](const auto& weak) { return weak.expired(); });
      std::string refusal;
      if (auto slot = io_->limiter->tryAcquire(address, refusal)) {
        io_->connections.push_back(connection);
        connection->start(std::move(*slot));
      } else {
        ++context_->stats.refused_total;
        connection->refuse(http::status::service_unavailable,
                           "The preview listener has preview.max_connections (" +
                               std::to_string(config_.max_connections) +
                               ") connections open, each with a request; retry shortly.\n");
      }
    }
    if (ec) {
      // Out of descriptors and the like: wait a little rather than spin on the error.
      spdlog::warn("preview listener: accept failed ({}); retrying in 100 ms", ec.message());
      io_->retry.expires_after(std::chrono::milliseconds(100));
      io_->retry.async_wait([this](boost::system::error_code waited) {
        if (!waited) accept();
      });
      return;
    }
    accept();
  });
}

void PreviewListener::stop() noexcept {
  if (stopped_) return;
  stopped_ = true;
  sessions_.previews().setUrlPattern({});
  context_->stopping = true;  // queued opens do nothing; sessions are let go on the I/O thread
  if (thread_.joinable()) {
    net::post(io_->io, [this] {
      boost::system::error_code ignored;
      io_->acceptor.close(ignored);
      io_->retry.cancel();
      for (auto& weak : io_->connections) {
        if (auto connection = weak.lock()) connection->close("the server stopped");
      }
    });
  }
  // Opens under way finish (bounded by the agent's wait), then their results find the
  // connections closed (and let their sessions and streams go) on the I/O thread.
  io_->openers.join();
  io_->busy.reset();
  if (thread_.joinable()) thread_.join();
}

}  // namespace preview
