#include "sandbox/docker/engine_client.h"

#include <boost/asio/ssl/error.hpp>
#include <optional>
#include <utility>

#include "common/json_limits.h"
#include "sandbox/docker/engine_connection.h"
#include "sandbox/docker/tls_connection.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

using detail::EngineConnection;
using detail::EngineReplyParser;
using detail::EngineRequest;
namespace net = detail::net;
namespace beast = detail::beast;
namespace http = detail::http;

constexpr const char* kJson = "application/json";

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
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::ssl::error::stream_truncated;
}

std::string requestLine(const EngineRequest& request) {
  return std::string(request.method_string()) + " " + std::string(request.target());
}

EngineRequest makeRequest(const EngineClientOptions& options, Method method,
                          std::string_view path) {
  EngineRequest request{toVerb(method), "/" + options.api_version + std::string(path), 11};
  const auto& endpoint = options.endpoint;
  request.set(http::field::host, endpoint.isTcp() ? endpoint.uri().substr(6) : "docker");
  request.set(http::field::user_agent, "sandbox-mcp");
  request.keep_alive(true);
  return request;
}

}  // namespace

nlohmann::json EngineResponse::json() const {
  auto parsed = common::parseBoundedOrDiscarded(body);
  if (parsed.is_discarded()) {
    throw EngineError(status, "reply is not JSON: " + body.substr(0, 200), "parse reply");
  }
  return parsed;
}

EngineClient::EngineClient(EngineClientOptions options) : options_(std::move(options)) {
  if (options_.endpoint.isTcp()) {
    tls_ = std::make_unique<detail::TlsContext>(options_.tls);
  } else if (!options_.tls.ca_file.empty() || !options_.tls.cert_file.empty() ||
             !options_.tls.key_file.empty()) {
    throw SandboxError("TLS files are for tcp:// engines; " + options_.endpoint.uri() +
                       " is a local socket");
  }
}

EngineClient::~EngineClient() = default;

std::unique_ptr<EngineConnection> EngineClient::connect() {
  if (tls_) {
    return std::make_unique<detail::TlsConnection>(options_.endpoint, *tls_,
                                                   options_.connect_timeout);
  }
  return std::make_unique<detail::UnixConnection>(options_.endpoint.path, options_.connect_timeout);
}

std::unique_ptr<EngineConnection> EngineClient::acquire(bool& reused) {
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
  return connect();
}

void EngineClient::release(std::unique_ptr<EngineConnection> connection) {
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
}

EngineResponse EngineClient::request(Method method, std::string_view path,
                                     const std::optional<nlohmann::json>& body,
                                     std::optional<std::chrono::milliseconds> timeout) {
  try {
    if (!body) return send(method, path, std::nullopt, timeout);
    return send(method, path, RawBody{kJson, body->dump()}, timeout);
  } catch (const EngineError& e) {
    noteFailure(e);
    throw;
  }
}

EngineResponse EngineClient::request(Method method, std::string_view path, const RawBody& body,
                                     std::optional<std::chrono::milliseconds> timeout) {
  try {
    return send(method, path, body, timeout);
  } catch (const EngineError& e) {
    noteFailure(e);
    throw;
  }
}

void EngineClient::noteFailure(const EngineError& error) noexcept {
  if (error.status() == 0) {
    transport_failures_.fetch_add(1, std::memory_order_relaxed);
  } else if (error.status() >= 500) {
    server_failures_.fetch_add(1, std::memory_order_relaxed);
  }
}

EngineResponse EngineClient::send(Method method, std::string_view path, std::optional<RawBody> body,
                                  std::optional<std::chrono::milliseconds> timeout) {
  EngineRequest request = makeRequest(options_, method, path);
  if (body) {
    request.set(http::field::content_type, body->content_type);
    request.body() = std::move(body->bytes);
  }
  request.prepare_payload();
  const std::string line = requestLine(request);

  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    auto connection = acquire(reused);
    EngineReplyParser parser;
    parser.body_limit(options_.max_reply_bytes);
    if (method == Method::kHead) parser.skip(true);
    const auto ec =
        connection->exchange(request, parser, timeout.value_or(options_.request_timeout), false);
    if (ec) {
      if (reused && attempt == 0 && looksStale(ec)) {
        logger().debug("engine: stale keep-alive connection for {}; retrying", line);
        continue;
      }
      throw EngineError(0, connection->describe(ec), line);
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
  EngineRequest request = makeRequest(options_, method, path);
  request.set(http::field::connection, "Upgrade");
  request.set(http::field::upgrade, "tcp");
  request.prepare_payload();
  const std::string line = requestLine(request);

  std::unique_ptr<EngineConnection> connection;
  try {
    connection = connect();
  } catch (const EngineError& e) {
    noteFailure(e);
    throw;
  }
  EngineReplyParser parser;
  parser.body_limit(options_.max_reply_bytes);
  const auto wait = timeout.value_or(options_.request_timeout);
  if (const auto ec = connection->exchange(request, parser, wait, /*header_only=*/true)) {
    transport_failures_.fetch_add(1, std::memory_order_relaxed);
    throw EngineError(0, connection->describe(ec), line);
  }
  const auto status = static_cast<int>(parser.get().result_int());
  if (status == 101) return EngineConnection::detach(std::move(connection));
  if (status >= 500) server_failures_.fetch_add(1, std::memory_order_relaxed);
  // Not upgraded: read the error body so the message says why.
  if (status >= 400 && !connection->readRest(parser)) {
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
