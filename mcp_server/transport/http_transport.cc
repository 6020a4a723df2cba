#include "transport/http_transport.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <exception>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "transport/http_connection.h"
#include "transport/transport_log.h"

namespace transport {
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpTransport::IoState {
  explicit IoState(std::size_t threads)
      : ioc(static_cast<int>(threads)),
        acceptor(net::make_strand(ioc)),
        sweep_timer(acceptor.get_executor()) {}

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor;
  net::steady_timer sweep_timer;  // shares the acceptor's strand
  std::atomic<bool> stopping{false};

  std::mutex running_mutex;
  std::condition_variable running_cv;
  std::size_t running_threads = 0;
};

namespace {

net::ip::address parseBindAddress(const std::string& text) {
  if (text == "localhost") return net::ip::make_address("127.0.0.1");
  boost::system::error_code ec;
  auto address = net::ip::make_address(text, ec);
  if (ec) {
    throw std::invalid_argument("http.address '" + text +
                                "' is not an IP address; use e.g. 127.0.0.1, ::1 or 0.0.0.0");
  }
  return address;
}

}  // namespace

HttpTransport::HttpTransport(std::shared_ptr<jsonrpc::EndpointFactory> factory,
                             HttpTransportOptions options) {
  RequestGuardConfig guard;
  guard.path = options.path;
  guard.token = options.token;
  guard.allowed_origins = options.allowed_origins;
  io_ = std::make_unique<IoState>(std::max<std::size_t>(options.io_threads, 1));
  context_ =
      std::make_shared<HttpServerContext>(std::move(factory), std::move(options), std::move(guard));
}

HttpTransport::~HttpTransport() { stop(); }

void HttpTransport::start() {
  {
    std::lock_guard lock(state_mutex_);
    if (started_) throw std::logic_error("HttpTransport::start() called twice");
    started_ = true;
  }
  const auto& options = context_->options;
  const net::ip::address address = parseBindAddress(options.address);
  if (!address.is_loopback() && options.token.empty()) {
    throw std::invalid_argument(
        "refusing to serve HTTP on non-loopback address " + options.address +
        " without a bearer token: pass --token-file FILE or set SANDBOX_MCP_TOKEN (or bind to "
        "127.0.0.1)");
  }
  // Browsers reach loopback servers through DNS names they were tricked into resolving to
  // 127.0.0.1; on a loopback bind only loopback Host names are legitimate.
  context_->guard.require_loopback_host = address.is_loopback();

  const tcp::endpoint endpoint(address, options.port);
  auto& acceptor = io_->acceptor;
  try {
    acceptor.open(endpoint.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(net::socket_base::max_listen_connections);
  } catch (const boost::system::system_error& e) {
    throw std::system_error(e.code(), "cannot listen on " + options.address + ":" +
                                          std::to_string(options.port) +
                                          " (is the port in use? choose another with --port)");
  }
  bound_port_ = acceptor.local_endpoint().port();
  io_->work.emplace(io_->ioc.get_executor());
  startAccepting();
  scheduleSweep();

  const std::size_t threads = std::max<std::size_t>(options.io_threads, 1);
  io_->running_threads = threads;
  for (std::size_t i = 0; i < threads; ++i) {
    io_threads_.emplace_back([this] {
      for (;;) {
        try {
          io_->ioc.run();
          break;
        } catch (const std::exception& e) {
          log().error("http transport: I/O handler threw: {}", e.what());
        }
      }
      std::lock_guard lock(io_->running_mutex);
      --io_->running_threads;
      io_->running_cv.notify_all();
    });
  }
  log().info("http transport listening on http://{}:{}{}{}", options.address, bound_port_,
             options.path, options.token.empty() ? "" : " (bearer token required)");
}

void HttpTransport::startAccepting() {
  io_->acceptor.async_accept(
      net::make_strand(io_->ioc), [this](boost::system::error_code ec, tcp::socket socket) {
        if (io_->stopping) return;
        if (ec) {
          log().warn("http transport: accept failed: {}", ec.message());
        } else {
          std::make_shared<HttpConnection>(std::move(socket), context_)->start();
        }
        startAccepting();
      });
}

void HttpTransport::scheduleSweep() {
  const auto timeout = context_->options.session_idle_timeout;
  const auto interval = std::clamp<std::chrono::milliseconds>(
      timeout / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(60'000));
  io_->sweep_timer.expires_after(interval);
  io_->sweep_timer.async_wait([this, timeout](boost::system::error_code ec) {
    if (ec || io_->stopping) return;
    auto expired = context_->sessions.takeIdle(SessionRegistry::Clock::now(), timeout);
    if (!expired.empty()) {
      log().info("http transport: {} idle session(s) expired after {} ms", expired.size(),
                 timeout.count());
      closeEndpointsAsync(expired);
    }
    scheduleSweep();
  });
}

void HttpTransport::closeEndpointsAsync(
    const std::vector<std::shared_ptr<jsonrpc::Endpoint>>& endpoints) {
  for (const auto& endpoint : endpoints) {
    if (!context_->pool.submit([endpoint] { endpoint->close(); })) endpoint->close();
  }
}

void HttpTransport::stop() noexcept {
  {
    std::lock_guard lock(state_mutex_);
    if (stopped_) return;
    if (!started_) {
      stopped_ = true;
      stopped_cv_.notify_all();
      return;
    }
  }
  if (io_->stopping.exchange(true)) {  // another thread is stopping: wait for it
    std::unique_lock lock(state_mutex_);
    stopped_cv_.wait(lock, [this] { return stopped_; });
    return;
  }
  net::post(io_->acceptor.get_executor(), [this] {
    boost::system::error_code ignored;
    io_->acceptor.close(ignored);
    io_->sweep_timer.cancel();
  });

  // Close endpoints first: that cancels running tool calls, so the pool drains quickly.
  const auto closeAll = [this] {
    for (auto& endpoint : context_->sessions.takeAll()) {
      try {
        endpoint->close();
      } catch (const std::exception& e) {
        log().error("http transport: closing an endpoint threw: {}", e.what());
      }
    }
  };
  closeAll();
  context_->pool.shutdown();
  context_->control_pool.shutdown();
  closeAll();  // sessions an in-flight initialize registered meanwhile

  std::vector<std::shared_ptr<HttpConnection>> connections;
  {
    std::lock_guard lock(context_->connections_mutex);
    for (auto& [raw, weak] : context_->connections) {
      if (auto connection = weak.lock()) connections.push_back(std::move(connection));
    }
  }
  for (auto& connection : connections) connection->shutdown();
  connections.clear();
  io_->work.reset();

  // Pending writes get up to one write timeout to finish; then the I/O loop is cut short.
  {
    std::unique_lock lock(io_->running_mutex);
    const auto grace = context_->options.write_timeout + std::chrono::seconds(1);
    if (!io_->running_cv.wait_for(lock, grace, [this] { return io_->running_threads == 0; })) {
      log().warn("http transport: connections still busy after {} ms; forcing shutdown",
                 grace.count());
      io_->ioc.stop();
    }
  }
  for (auto& thread : io_threads_) {
    if (thread.joinable()) thread.join();
  }
  log().info("http transport stopped");
  std::lock_guard lock(state_mutex_);
  stopped_ = true;
  stopped_cv_.notify_all();
}

void HttpTransport::wait() {
  std::unique_lock lock(state_mutex_);
  stopped_cv_.wait(lock, [this] { return stopped_; });
}

std::size_t HttpTransport::sessionCount() const { return context_->sessions.size(); }

}  // namespace transport
