// HttpConnection's life (start, shutdown) and the reading of each request: keep-alive wait,
// header, body paid for from the shared budget. Routing is in http_connection_routing.cc, the
// handlers on worker threads in http_connection_handling.cc, writing in http_connection_writing.cc.
#include "transport/http_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <string_view>
#include <utility>

#include "common/text.h"
#include "transport/transport_log.h"

namespace transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr std::uint32_t kHeaderLimitBytes = 16 * 1024;
constexpr std::size_t kIdleReadBytes = 4096;

using common::iequals;

}  // namespace

HttpConnection::HttpConnection(tcp::socket socket, std::shared_ptr<HttpServerContext> context,
                               ConnectionLimiter::Slot slot)
    : stream_(std::move(socket)), context_(std::move(context)), slot_(std::move(slot)) {
  beast::error_code ec;
  const auto remote = stream_.socket().remote_endpoint(ec);
  remote_ = ec ? std::string("unknown")
               : remote.address().to_string() + ":" + std::to_string(remote.port());
}

HttpConnection::~HttpConnection() {
  std::lock_guard lock(context_->connections_mutex);
  context_->connections.erase(this);
}

void HttpConnection::start() {
  {
    std::lock_guard lock(context_->connections_mutex);
    context_->connections[this] = weak_from_this();
  }
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->doReadHeader(); });
}

void HttpConnection::shutdown() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->closing_ = true;
    if (!self->writing_ && self->writes_.empty() && !self->awaiting_handler_) self->closeSocket();
  });
}

// ---- Reading ---------------------------------------------------------------------------------

void HttpConnection::doReadHeader() {
  if (closing_ || closed_) {
    closeSocket();
    return;
  }
  body_reservation_.reset();  // the previous request's body and its parse are gone
  parser_.emplace();
  parser_->header_limit(kHeaderLimitBytes);
  parser_->body_limit(context_->options.max_body_bytes);
  http_version_ = 11;
  keep_alive_ = true;
  if (buffer_.size() != 0) {  // the next request has begun
    first_request_ = false;
    stream_.expires_after(context_->options.header_timeout);
    readHeader();
    return;
  }
  // Wait for a request to begin: the first within the header timeout of the connection's start,
  // a later one within the idle timeout; its header then has the header timeout. Meanwhile the
  // connection holds no request, so the limiter may reclaim its place for a newcomer.
  stream_.expires_after(first_request_ ? context_->options.header_timeout
                                       : context_->options.idle_timeout);
  buffer_.shrink_to_fit();  // what the last body grew it to: thousands may wait at once
  slot_.markIdle([weak = weak_from_this(), executor = stream_.get_executor()] {
    net::post(executor, [weak] {
      if (const auto self = weak.lock(); self && !self->closed_) {
        log().debug("http {}: idle connection closed to make room for a new one", self->remote_);
        self->closeSocket();
      }
    });
  });
  stream_.async_read_some(
      buffer_.prepare(kIdleReadBytes),
      beast::bind_front_handler(&HttpConnection::onIdleData, shared_from_this()));
}

void HttpConnection::onIdleData(beast::error_code ec, std::size_t bytes) {
  buffer_.commit(bytes);
  // Reclaimed first: a request racing in meets a closed connection, as it would the end of the
  // keep-alive timeout.
  if (!slot_.markBusy() || ec) {
    stream_.expires_never();
    closeSocket();  // reclaimed, timed out, closed by the client, or shutdown
    return;
  }
  // The first request's header keeps the deadline set when the connection started.
  if (!first_request_) stream_.expires_after(context_->options.header_timeout);
  first_request_ = false;
  readHeader();
}

void HttpConnection::readHeader() {
  http::async_read_header(
      stream_, buffer_, *parser_,
      beast::bind_front_handler(&HttpConnection::onReadHeader, shared_from_this()));
}

void HttpConnection::onReadHeader(beast::error_code ec, std::size_t /*bytes*/) {
  stream_.expires_never();  // an expired timer would otherwise kill the next operation
  if (ec == http::error::body_limit) {
    respondError(http::status::payload_too_large, kInvalidRequest,
                 "Payload Too Large: the request body exceeds the limit of " +
                     std::to_string(context_->options.max_body_bytes) +
                     " bytes; send a smaller message or raise http.max_body_bytes",
                 {}, true);
    return;
  }
  if (ec == http::error::header_limit) {
    respondError(http::status::request_header_fields_too_large, kInvalidRequest,
                 "Request Header Fields Too Large: headers must fit in " +
                     std::to_string(kHeaderLimitBytes) + " bytes",
                 {}, true);
    return;
  }
  if (ec) {
    if (ec == beast::error::timeout) {
      log().debug("http {}: request header not complete after {} ms; closing", remote_,
                  context_->options.header_timeout.count());
    } else if (ec != http::error::end_of_stream && ec != net::error::operation_aborted) {
      log().debug("http {}: reading request header failed: {}", remote_, ec.message());
    }
    closeSocket();
    return;
  }
  const auto& header = parser_->get();
  http_version_ = header.version();
  keep_alive_ = header.keep_alive();
  if (auto rejection = checkRequest(header, context_->guard)) {
    log().info("http {}: {} {} refused with {}: {}", remote_, std::string(header.method_string()),
               std::string(header.target()), static_cast<unsigned>(rejection->status),
               rejection->message);
    respondError(rejection->status, rejection->code, rejection->message, rejection->headers,
                 !parser_->is_done());
    return;
  }
  principal_ = authenticate(header, context_->guard).value_or(jsonrpc::Principal{});
  if (!parser_->is_done() &&
      iequals(std::string_view(header[http::field::expect]), "100-continue")) {
    enqueue(WriteItem{WriteItem::Kind::kContinue, nullptr, nullptr, {}, false, false});
    return;  // onWrite reads the body once the interim response is out
  }
  doReadBody();
}

void HttpConnection::doReadBody() {
  if (!reserveBody()) return;
  if (parser_->is_done()) {
    handleRequest();
    return;
  }
  stream_.expires_after(context_->options.read_timeout);  // for the whole body, not per piece
  readMoreBody();
}

// The body is read piece by piece so that each piece is paid for from the shared budget before
// the next is read: memory held for bodies is bounded by what clients really sent.
void HttpConnection::readMoreBody() {
  http::async_read_some(stream_, buffer_, *parser_,
                        beast::bind_front_handler(&HttpConnection::onReadBody, shared_from_this()));
}

void HttpConnection::onReadBody(beast::error_code ec, std::size_t bytes) {
  if (ec == http::error::body_limit) {
    stream_.expires_never();
    onReadHeader(ec, bytes);  // same 413 answer
    return;
  }
  if (ec) {
    stream_.expires_never();
    log().debug("http {}: reading request body failed: {}", remote_, ec.message());
    closeSocket();
    return;
  }
  if (!reserveBody()) {
    stream_.expires_never();
    return;
  }
  if (!parser_->is_done()) {
    readMoreBody();
    return;
  }
  stream_.expires_never();
  handleRequest();
}

// Pays for the body bytes read so far (plus what waits in the read buffer) from the budget all
// connections share; answers 503 when it is spent. Paying for bytes received, not for a declared
// Content-Length, means a client cannot hold the budget with headers alone.
bool HttpConnection::reserveBody() {
  const std::size_t bytes = parser_->get().body().size() + buffer_.size();
  if (context_->body_budget->tryGrow(body_reservation_, bytes)) return true;
  log().info("http {}: {}-byte body refused: {} of {} bytes of request bodies already in flight",
             remote_, bytes, context_->body_budget->inUse(), context_->body_budget->maxBytes());
  respondError(http::status::service_unavailable, kServerError,
               "Service Unavailable: the server holds too many large request bodies right now "
               "(http.max_body_bytes_in_flight = " +
                   std::to_string(context_->body_budget->maxBytes()) +
                   " bytes); retry shortly or send a smaller message",
               {{"Retry-After", "1"}}, true);
  return false;
}

}  // namespace transport
