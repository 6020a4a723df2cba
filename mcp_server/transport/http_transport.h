// MCP Streamable HTTP transport (spec 2025-11-25) on one endpoint path, built on Boost.Beast.
// POST carries JSON-RPC (answered as JSON, or as an SSE stream once the handler notifies),
// DELETE ends a session, Mcp-Session-Id identifies sessions, idle sessions expire.
// Thread-safety: start()/stop()/wait() may be called from any one controlling thread; port()
// and sessionCount() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "jsonrpc/endpoint.h"
#include "transport/http_request_guard.h"
#include "transport/origin_check.h"
#include "transport/param_headers.h"

namespace transport {

// The answer of a plain GET endpoint (health, readiness, metrics): not JSON-RPC.
struct PlainResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};
using PlainHandler = std::function<PlainResponse()>;

struct HttpTransportOptions {
  // Listen address. Anything but loopback requires `token` (start() throws otherwise).
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;  // 0 picks an ephemeral port; see HttpTransport::port()
  std::string path = "/mcp";
  // Bearer token every request must carry (principal "default"); empty with principal_tokens
  // empty too disables the check (loopback only).
  std::string token;
  // The tokens file's tokens, each authenticating its principal (config/principals.h).
  std::vector<PrincipalToken> principal_tokens;
  // Tool arguments 2026-07-28 clients also send as Mcp-Param-* headers (x-mcp-header): each must
  // agree with its argument.
  ParamHeaders param_headers;
  // Origin allowlist; "scheme://host" allows any port, "scheme://host:port" only that one.
  std::vector<std::string> allowed_origins = defaultAllowedOrigins();
  // preview.domain while previews are on (empty: off): requests whose Host or Origin is under it
  // are refused (403), whatever allowed_origins says.
  std::string preview_domain;
  std::size_t max_body_bytes = std::size_t{4} * 1024 * 1024;  // config: http.max_body_bytes
  // Request bodies held by all connections at once (BodyBudget); past it a 503.
  // config: http.max_body_bytes_in_flight
  std::size_t max_body_bytes_in_flight = std::size_t{256} * 1024 * 1024;
  std::chrono::milliseconds session_idle_timeout{30 * 60 * 1000};  // then endpoint->close()
  // Appended to every Mcp-Session-Id this server mints, after "~" ("<32 hex>~<tag>"): a fleet's
  // front routes a session to its replica by it, keeping no table (deploy/haproxy.cfg). Empty:
  // ids are the 32 hex digits alone. Must be visible ASCII without "~" (an instance id is).
  std::string session_route_tag;
  // MCP sessions open at once (each holds an endpoint until DELETE or idle expiry); past it an
  // initialize gets an error. 0: no bound. config: http.max_sessions
  std::size_t max_sessions = 1024;
  // Requests of one MCP session in flight at once (running, waiting for their turn or for a
  // task's result); past it a request gets 429 at once. Notifications, responses and pings always
  // pass. 0: no bound. config: http.max_requests_in_flight_per_session
  std::size_t max_requests_in_flight_per_session = 64;
  std::size_t io_threads = 1;      // socket I/O only; never blocks
  std::size_t worker_threads = 8;  // run Endpoint::handle/close; started up front
  // Grown to when requests would wait (WorkerPool). Requests that wait hold no thread (answered
  // later), so this bounds work: size it above what the server's own limits let run at once.
  std::size_t max_worker_threads = 80;
  // Bound on reading a request's body, once its header is in.
  std::chrono::milliseconds read_timeout{30'000};
  std::chrono::milliseconds write_timeout{30'000};  // per write
  // Open connections, in total and per peer IP address. At either bound the connection idle
  // longest makes room (ConnectionLimiter); if none is idle, the new one gets a 503 and is closed.
  // 0: no bound. config: http.max_connections, http.max_connections_per_address
  std::size_t max_connections = 256;
  std::size_t max_connections_per_address = 128;
  // From a connection's start, or from the first byte of a later request, to the end of the
  // request's header (slowloris: a header dripped a byte at a time). config: http.header_timeout_ms
  std::chrono::milliseconds header_timeout{10'000};
  // Keep-alive: how long a connection may wait for its next request. config: http.idle_timeout_ms
  std::chrono::milliseconds idle_timeout{30'000};
  // Bodies at least this large are parsed on a worker thread, not on the I/O thread.
  std::size_t inline_parse_max_bytes = std::size_t{64} * 1024;
  // GET (and HEAD) endpoints beside the MCP path, e.g. /healthz: path -> handler, run on a
  // control thread (never behind tool calls). The same Host, Origin and token checks apply.
  std::map<std::string, PlainHandler> get_endpoints;
};

struct HttpServerContext;  // shared with the connections; defined in http_connection.h

class HttpTransport {
 public:
  HttpTransport(std::shared_ptr<jsonrpc::EndpointFactory> factory, HttpTransportOptions options);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds, listens and starts the I/O threads; returns at once. Throws std::invalid_argument for
  // a bad address or a non-loopback bind without a token, std::system_error if binding fails.
  void start();

  // The bound port (the ephemeral one when options.port was 0). Valid after start().
  [[nodiscard]] std::uint16_t port() const noexcept { return bound_port_; }

  // Stops accepting, closes every session's endpoint, lets queued work and pending writes
  // finish (bounded by write_timeout), then joins all threads. Idempotent.
  void stop() noexcept;

  // Blocks until stop() has finished (e.g. main waits here while a signal thread calls stop()).
  void wait();

  [[nodiscard]] std::size_t sessionCount() const;

  // From now on an initialize (a new MCP session) gets 503 with Retry-After, so a load balancer
  // or client goes to another replica; open sessions keep working. Safe from any thread.
  void beginDrain() noexcept;
  [[nodiscard]] bool draining() const noexcept;

 private:
  struct IoState;  // io_context, acceptor, sweep timer; keeps Asio out of this header

  void startAccepting();
  void scheduleSweep();
  void closeEndpointsAsync(const std::vector<std::shared_ptr<jsonrpc::Endpoint>>& endpoints);

  std::shared_ptr<HttpServerContext> context_;
  std::unique_ptr<IoState> io_;
  std::vector<std::thread> io_threads_;
  std::uint16_t bound_port_ = 0;

  std::mutex state_mutex_;
  std::condition_variable stopped_cv_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace transport
