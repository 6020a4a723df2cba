#include "transport/http_transport.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/accept_backoff.h"
#include "transport/http_connection.h"
#include "transport/transport_log.h"

namespace transport {
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpTransport::IoState {
  explicit IoState(std::size_t threads)
      : ioc(static_cast<int>(threads)),
        acceptor(net::make_strand(ioc)),
        sweep_timer(acceptor.get_executor()),
        accept_pause(acceptor.get_executor()) {}

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor;
  net::steady_timer sweep_timer;   // shares the acceptor's strand
  net::steady_timer accept_pause;  // likewise: the back-off after a failed accept
  common::AcceptBackoff backoff;   // acceptor's strand only
  // Connections refused by the limits since the last log line about them (acceptor's strand).
  std::uint64_t refused_since_log = 0;
  std::chrono::steady_clock::time_point refused_logged_at{};
  std::atomic<bool> stopping{false};

  // The accept loop (acceptor's strand): limits, then a connection per accepted socket.
  void startAccepting(const std::shared_ptr<HttpServerContext>& context);
  void onAcceptFailed(const boost::system::error_code& ec,
                      const std::shared_ptr<HttpServerContext>& context);
  void admit(tcp::socket socket, const std::shared_ptr<HttpServerContext>& context);

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

// Answers a connection refused by the connection limits, best effort and without blocking (a
// fresh socket's send buffer is empty), then closes it.
void refuseConnection(tcp::socket& socket, std::string_view reason) {
  const std::string body =
      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":)" +
      nlohmann::json("Service Unavailable: too many connections: " + std::string(reason) +
                     "; retry later")
          .dump() +
      "}}";
  const std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: "
      "1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  [[maybe_unused]] const auto sent =
      ::send(socket.native_handle(), response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace

void HttpTransport::IoState::startAccepting(const std::shared_ptr<HttpServerContext>& context) {
  acceptor.async_accept(net::make_strand(ioc),
                        [this, context](boost::system::error_code ec, tcp::socket socket) {
                          if (stopping) return;
                          if (ec) {
                            onAcceptFailed(ec, context);
                            return;
                          }
                          admit(std::move(socket), context);
                          startAccepting(context);
                        });
}

void HttpTransport::IoState::onAcceptFailed(const boost::system::error_code& ec,
                                            const std::shared_ptr<HttpServerContext>& context) {
  if (common::AcceptBackoff::isTransient(ec.value())) {
    startAccepting(context);  // one connection went away while queued; the next is unaffected
    return;
  }
  if (const auto failures = backoff.onFailure(common::AcceptBackoff::Clock::now())) {
    log().warn(
        "http transport: accept failed ({} time(s) since the last report): {}; pausing {} ms "
        "after each failure (raise the fd limit, e.g. ulimit -n or LimitNOFILE=, or lower "
        "http.max_connections)",
        *failures, std::strerror(ec.value()), common::AcceptBackoff::kPause.count());
  }
  accept_pause.expires_after(common::AcceptBackoff::kPause);
  accept_pause.async_wait([this, context](boost::system::error_code wait_ec) {
    if (wait_ec || stopping) return;
    startAccepting(context);
  });
}

void HttpTransport::IoState::admit(tcp::socket socket,
                                   const std::shared_ptr<HttpServerContext>& context) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  const std::string address = ec ? std::string("unknown") : remote.address().to_string();
  std::string refusal;
  auto slot = context->limiter->tryAcquire(address, refusal);
  if (!slot) {
    // Logged at most every 10 s: a flood of refused connections must not flood the log.
    ++refused_since_log;
    const auto now = std::chrono::steady_clock::now();
    if (now - refused_logged_at >= std::chrono::seconds(10)) {
      log().warn("http transport: refused {} connection(s) over the limits; latest: {}",
                 refused_since_log, refusal);
      refused_since_log = 0;
      refused_logged_at = now;
    }
    refuseConnection(socket, refusal);
    return;
  }
  // Responses go out in parts (headers, then SSE events as they come): without TCP_NODELAY a
  // small part waits for the peer's delayed ACK, ~40 ms per exchange on Linux.
  socket.set_option(tcp::no_delay(true), ec);
  std::make_shared<HttpConnection>(std::move(socket), context, std::move(*slot))->start();
}

HttpTransport::HttpTransport(std::shared_ptr<jsonrpc::EndpointFactory> factory,
                             HttpTransportOptions options) {
  RequestGuardConfig guard;
  guard.path = options.path;
  guard.token = options.token;
  guard.principal_tokens = options.principal_tokens;
  guard.allowed_origins = options.allowed_origins;
  guard.preview_domain = options.preview_domain;
  for (const auto& [path, handler] : options.get_endpoints) guard.get_paths.push_back(path);
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
  if (!address.is_loopback() && options.token.empty() && options.principal_tokens.empty()) {
    throw std::invalid_argument(
        "refusing to serve HTTP on non-loopback address " + options.address +
        " without a bearer token: pass --token-file FILE or --tokens-file FILE, or set "
        "SANDBOX_MCP_TOKEN (or bind to 127.0.0.1)");
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
  log().info(
      "http transport listening on http://{}:{}{}{}", options.address, bound_port_, options.path,
      options.token.empty() && options.principal_tokens.empty() ? "" : " (bearer token required)");
}

void HttpTransport::startAccepting() { io_->startAccepting(context_); }

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
    io_->accept_pause.cancel();
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
  context_->parse_pool.shutdown();
  context_->probe_pool
      .shutdown();  // a probe waiting on a slow engine ends with the checks' timeout
  closeAll();       // sessions an in-flight initialize registered meanwhile

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

void HttpTransport::beginDrain() noexcept { context_->draining = true; }

bool HttpTransport::draining() const noexcept { return context_->draining; }

}  // namespace transport
