#include "sandbox/docker/engine_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <utility>

#include "common/json_limits.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using LocalStream = beast::basic_stream<net::local::stream_protocol>;
using Request = http::request<http::string_body>;
using ResponseParser = http::response_parser<http::string_body>;

http::verb toVerb(Method method) {
  switch (method) {
    case Method::kGet:
      return http::verb::get;
    case Method::kHead:
      return http::verb::head;
    case Method::kPost:
      return http::verb::post;
    case Method::kPut:
      return http::verb::put;
    case Method::kDelete:
      return http::verb::delete_;
  }
  return http::verb::get;
}

// A keep-alive connection that the engine closed while idle fails like this on first use.
bool looksStale(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe;
}

std::string requestLine(const Request& request) {
  return std::string(request.method_string()) + " " + std::string(request.target());
}

}  // namespace

// One Unix-socket connection with a private io_context: asynchronous Beast operations are run
// to completion on the calling thread, which gives synchronous calls with real deadlines.
class EngineClient::Connection {
 public:
  Connection(const std::string& socket_path, std::chrono::milliseconds connect_timeout)
      : stream_(ioc_) {
    stream_.expires_after(connect_timeout);
    const auto ec = run([&](auto handler) {
      stream_.async_connect(net::local::stream_protocol::endpoint(socket_path), handler);
    });
    if (ec) {
      throw EngineError(0, "cannot connect to " + socket_path + ": " + ec.message(), "connect");
    }
  }

  // Writes the request and reads the reply header (and the body unless header_only).
  beast::error_code exchange(const Request& request, ResponseParser& parser,
                             std::chrono::milliseconds timeout, bool header_only = false) {
    stream_.expires_after(timeout);  // one deadline for the whole exchange
    auto ec = run([&](auto handler) { http::async_write(stream_, request, handler); });
    if (ec) return ec;
    if (header_only) {
      return run([&](auto handler) { http::async_read_header(stream_, buffer_, parser, handler); });
    }
    return run([&](auto handler) { http::async_read(stream_, buffer_, parser, handler); });
  }

  // Finishes reading a reply whose header exchange(header_only) already read.
  beast::error_code readRest(ResponseParser& parser) {
    return run([&](auto handler) { http::async_read(stream_, buffer_, parser, handler); });
  }

  // Gives the socket away (for an upgraded stream) with the bytes read past the reply header.
  UpgradedConnection detach() {
    stream_.expires_never();
    UpgradedConnection out;
    const auto data = buffer_.data();
    out.buffered.assign(static_cast<const char*>(data.data()), data.size());
    buffer_.consume(buffer_.size());
    out.fd.reset(stream_.release_socket().release());
    return out;
  }

  // True when nothing unexpected is left in the read buffer, so the connection can be reused.
  [[nodiscard]] bool clean() const noexcept { return buffer_.size() == 0; }

 private:
  template <class Initiate>
  beast::error_code run(Initiate&& initiate) {
    std::optional<beast::error_code> result;
    initiate([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result.value_or(beast::error_code(net::error::operation_aborted));
  }

  net::io_context ioc_{1};
  LocalStream stream_;
  beast::flat_buffer buffer_;
};

nlohmann::json EngineResponse::json() const {
  auto parsed = common::parseBoundedOrDiscarded(body);
  if (parsed.is_discarded()) {
    throw EngineError(status, "reply is not JSON: " + body.substr(0, 200), "parse reply");
  }
  return parsed;
}

EngineClient::EngineClient(EngineClientOptions options) : options_(std::move(options)) {}

EngineClient::~EngineClient() = default;

std::unique_ptr<EngineClient::Connection> EngineClient::acquire(bool& reused) {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      reused = true;
      return connection;
    }
  }
  reused = false;
  return std::make_unique<Connection>(options_.socket_path, options_.connect_timeout);
}

void EngineClient::release(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
}

namespace {

Request makeRequest(const EngineClientOptions& options, Method method, std::string_view path) {
  Request request{toVerb(method), "/" + options.api_version + std::string(path), 11};
  request.set(http::field::host, "docker");
  request.set(http::field::user_agent, "sandbox-mcp");
  request.keep_alive(true);
  return request;
}

}  // namespace

EngineResponse EngineClient::request(Method method, std::string_view path,
                                     const std::optional<nlohmann::json>& body,
                                     std::optional<std::chrono::milliseconds> timeout) {
  Request request = makeRequest(options_, method, path);
  if (body) {
    request.set(http::field::content_type, "application/json");
    request.body() = body->dump();
  }
  request.prepare_payload();
  const std::string line = requestLine(request);

  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    auto connection = acquire(reused);
    ResponseParser parser;
    parser.body_limit(options_.max_reply_bytes);
    if (method == Method::kHead) parser.skip(true);
    const auto ec =
        connection->exchange(request, parser, timeout.value_or(options_.request_timeout));
    if (ec) {
      if (reused && attempt == 0 && looksStale(ec)) {
        logger().debug("engine: stale keep-alive connection for {}; retrying", line);
        continue;
      }
      throw EngineError(0, ec.message(), line);
    }
    auto& reply = parser.get();
    EngineResponse out{static_cast<int>(reply.result_int()), std::move(reply.body())};
    if (reply.keep_alive() && connection->clean()) release(std::move(connection));
    if (out.status >= 400) throw EngineError(out.status, engineMessageFromBody(out.body), line);
    return out;
  }
}

UpgradedConnection EngineClient::upgrade(Method method, std::string_view path,
                                         std::optional<std::chrono::milliseconds> timeout) {
  Request request = makeRequest(options_, method, path);
  request.set(http::field::connection, "Upgrade");
  request.set(http::field::upgrade, "tcp");
  request.prepare_payload();
  const std::string line = requestLine(request);

  Connection connection(options_.socket_path, options_.connect_timeout);
  ResponseParser parser;
  parser.body_limit(options_.max_reply_bytes);
  const auto wait = timeout.value_or(options_.request_timeout);
  if (const auto ec = connection.exchange(request, parser, wait, /*header_only=*/true)) {
    throw EngineError(0, ec.message(), line);
  }
  const auto status = static_cast<int>(parser.get().result_int());
  if (status == 101) return connection.detach();
  // Not upgraded: read the error body so the message says why.
  if (status >= 400 && !connection.readRest(parser)) {
    throw EngineError(status, engineMessageFromBody(parser.get().body()), line);
  }
  throw EngineError(status, "expected 101 Switching Protocols, got " + std::to_string(status),
                    line);
}

std::string urlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '_' ||
                            byte == '.' || byte == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 0x0FU]);
    }
  }
  return out;
}

}  // namespace sandbox::docker
