// One accepted TCP connection of the Streamable HTTP transport (internal to mcp_transport).
// Thread-safety: all members run on the connection's strand; pool threads reach it only
// through net::post. Shared state lives in HttpServerContext, which is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/worker_pool.h"
#include "jsonrpc/endpoint.h"
#include "transport/body_budget.h"
#include "transport/connection_limiter.h"
#include "transport/http_request_guard.h"
#include "transport/http_transport.h"
#include "transport/session_registry.h"
#include "transport/transport_log.h"

namespace transport {

class HttpConnection;

struct HttpServerContext {
  HttpServerContext(std::shared_ptr<jsonrpc::EndpointFactory> endpoint_factory,
                    HttpTransportOptions transport_options, RequestGuardConfig guard_config)
      : factory(std::move(endpoint_factory)),
        options(std::move(transport_options)),
        guard(std::move(guard_config)),
        pool(options.worker_threads, options.max_worker_threads, "http-workers", &log()),
        control_pool(2, "http-control", &log()),
        parse_pool(1, 4, "http-parse", &log()),
        probe_pool(2, "http-probes", &log()),
        limiter(std::make_shared<ConnectionLimiter>(options.max_connections,
                                                    options.max_connections_per_address)),
        body_budget(std::make_shared<BodyBudget>(options.max_body_bytes_in_flight)) {}

  std::shared_ptr<jsonrpc::EndpointFactory> factory;
  HttpTransportOptions options;
  RequestGuardConfig guard;
  SessionRegistry sessions;
  common::WorkerPool pool;          // requests: may block for as long as a tool runs
  common::WorkerPool control_pool;  // notifications, responses, pings, DELETE: never behind `pool`
  common::WorkerPool parse_pool;    // large request bodies: JSON parsing off the I/O threads
  common::WorkerPool probe_pool;    // GET endpoints (health, metrics): never behind control work
  std::shared_ptr<ConnectionLimiter> limiter;
  std::shared_ptr<BodyBudget> body_budget;
  std::atomic<std::uint64_t> next_stream_id{1};
  std::atomic<bool> draining{false};  // HttpTransport::beginDrain(): no new MCP sessions
  // Held while the endpoint of a principal's 2026-07-28 requests is looked up or opened.
  std::mutex principal_mutex;

  // Live connections, so stop() can close them.
  std::mutex connections_mutex;
  std::unordered_map<HttpConnection*, std::weak_ptr<HttpConnection>> connections;
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServerContext> context,
                 ConnectionLimiter::Slot slot);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void start();
  // Finishes queued writes, then closes. Safe from any thread.
  void shutdown();

 private:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using json = jsonrpc::json;

  // One queued write; the front item stays in place (and its buffers valid) until written.
  struct WriteItem {
    enum class Kind { kResponse, kContinue, kSseHead, kChunk, kLastChunk };
    struct SseHead {
      boost::beast::http::response<boost::beast::http::empty_body> header;
      boost::beast::http::response_serializer<boost::beast::http::empty_body> serializer{header};
    };
    Kind kind;
    std::shared_ptr<Response> response;
    std::shared_ptr<SseHead> sse_head;
    std::string data;
    bool ends_request = false;  // after it: read the next request, or close
    bool close_after = false;   // after it: close instead (Connection: close / unread body)
  };

  // What a request keeps until it is answered, also when the answer comes later (Reply).
  struct RequestHolds {
    std::shared_ptr<CancelToken> cancel;   // notifications/cancelled reaches it while it lives
    std::shared_ptr<CancelToken> hang_up;  // fired when the client closes the connection
    std::shared_ptr<void> lease;           // keeps the MCP session and counts it in flight
  };

  // A request body parsed: the message, or the JSON-RPC error to answer instead.
  struct ParsedBody {
    json message;
    std::optional<json> error;
  };

  // JSON-RPC error codes of the answers the connection makes itself, and the MCP session header.
  static constexpr int kInvalidRequest = -32600;
  static constexpr int kInternalError = -32603;
  static constexpr int kServerError = -32000;
  static constexpr int kSessionNotFound = -32001;
  static constexpr std::string_view kSessionHeader = "Mcp-Session-Id";

  // Reading (http_connection.cc).
  void doReadHeader();
  void onIdleData(boost::beast::error_code ec, std::size_t bytes);
  void readHeader();
  void onReadHeader(boost::beast::error_code ec, std::size_t bytes);
  void doReadBody();
  void readMoreBody();
  void onReadBody(boost::beast::error_code ec, std::size_t bytes);
  [[nodiscard]] bool reserveBody();

  // Routing (strand; http_connection_routing.cc).
  void handleRequest();
  void handlePost();
  [[nodiscard]] static ParsedBody parseBody(const std::string& body);
  void onBodyParsed(ParsedBody parsed, const std::string& session_id);
  void handleDelete();
  // A lease on the endpoint that serves the request's principal's 2026-07-28 requests (no MCP
  // session), opened on first use and kept in the session registry under "principal:<name>";
  // nullopt when it cannot be opened.
  [[nodiscard]] std::optional<SessionRegistry::Lease> principalLease();
  void handlePlainGet();
  void dispatch(json message, std::shared_ptr<jsonrpc::Endpoint> endpoint,
                std::optional<SessionRegistry::Lease> lease, const std::string& session_id,
                bool opens_session);

  // Handling: the jobs dispatch() hands to the worker pools (worker threads), and what they send
  // back to the strand (http_connection_handling.cc).
  void runRequest(std::uint64_t serial, const json& message, jsonrpc::Endpoint& endpoint,
                  const std::string& session_id, const RequestHolds& holds);
  void runInitialize(std::uint64_t serial, const json& message,
                     const jsonrpc::Principal& principal);
  [[nodiscard]] std::optional<json> handleSafely(jsonrpc::Endpoint& endpoint, const json& message,
                                                 jsonrpc::RequestContext& ctx) const;
  void onNotify(std::uint64_t request_serial, const json& message);
  void onSessionClosed(std::uint64_t request_serial);
  // While a request is handled, nothing is read; this notices a client that hangs up meanwhile,
  // so that a request waiting for something (a task's result) stops waiting (strand).
  void watchForHangUp(std::uint64_t request_serial);
  // The client is gone before the request was answered (it hung up, or a write failed).
  void requestAbandoned();
  void onReadableWhileHandling(boost::beast::error_code ec, std::uint64_t request_serial);
  // `status`: the response's when it is not streamed (a 2026-07-28 error: modernAnswerStatus).
  void onHandled(std::uint64_t request_serial, std::optional<std::string> result,
                 const std::string& new_session_id,
                 boost::beast::http::status status = boost::beast::http::status::ok);
  [[nodiscard]] std::string peerLabel(const std::string& session_id) const;

  // Writing (strand; http_connection_writing.cc).
  void respondError(boost::beast::http::status status, int code, const std::string& message,
                    const std::vector<std::pair<std::string, std::string>>& headers = {},
                    bool close_after = false, const json& id = nullptr);
  void respondJson(boost::beast::http::status status, const json& body,
                   const std::string& session_id = {});
  void respondSerialized(boost::beast::http::status status, std::string body,
                         const std::string& session_id);
  void respondEmpty(boost::beast::http::status status);
  void respondPlain(const PlainResponse& plain, bool head_only);
  void sendResponse(std::shared_ptr<Response> response, bool close_after);
  void enqueue(WriteItem item);
  void doWrite();
  void onWrite(boost::beast::error_code ec, std::size_t bytes);
  void afterRequest(bool close_after);
  void drainAndClose();
  void doDrain();
  void closeSocket();

  boost::beast::tcp_stream stream_;
  std::shared_ptr<HttpServerContext> context_;
  ConnectionLimiter::Slot slot_;              // after context_: released before the context can go
  BodyBudget::Reservation body_reservation_;  // the current request's body; see reserveBody()
  std::string remote_;
  jsonrpc::Principal principal_;  // who the request being answered authenticated as
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;

  std::deque<WriteItem> writes_;
  bool writing_ = false;
  bool closing_ = false;  // shutdown() requested
  bool closed_ = false;

  // The request being answered (one at a time: no pipelining).
  std::uint64_t request_serial_ = 0;
  bool first_request_ = true;  // no keep-alive wait before it: the header timeout runs at once
  bool awaiting_handler_ = false;
  std::shared_ptr<CancelToken> hang_up_;  // the request being handled: see watchForHangUp()
  // A 2026-07-28 request's own cancellation: there, a response stream the client closed cancels
  // the request (a 2025 request goes on: a disconnection is not a cancellation).
  std::shared_ptr<CancelToken> cancel_on_hang_up_;
  bool streaming_ = false;  // the answer became an SSE stream
  bool keep_alive_ = true;
  unsigned http_version_ = 11;
  std::uint64_t stream_id_ = 0;
  std::uint64_t next_event_ = 1;
  std::size_t drained_bytes_ = 0;
  std::array<char, std::size_t{16} * 1024> drain_buffer_{};
};

}  // namespace transport
