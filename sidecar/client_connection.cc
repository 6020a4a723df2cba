// ClientConnection's life (start, close) and the reading of each request on its strand: header,
// body, the hand-off to a worker (request_handler), and the watch for the client leaving while the
// answer is produced. The worker's side is in client_connection_sink.cc, writing in
// client_connection_writing.cc.
#include "sidecar/client_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <cstring>
#include <utility>

namespace sidecar {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

ClientConnection::ClientConnection(Protocol::socket socket, std::shared_ptr<ServerState> state)
    : stream_(std::move(socket)), state_(std::move(state)), linger_timer_(stream_.get_executor()) {}

ClientConnection::~ClientConnection() {
  const std::lock_guard lock(state_->connections_mutex);
  state_->connections.erase(this);
}

void ClientConnection::start() {
  {
    const std::lock_guard lock(state_->connections_mutex);
    state_->connections[this] = weak_from_this();
  }
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->doReadHeader(); });
}

void ClientConnection::close() {
  markGone();  // wakes a worker blocked in sendChunk even if the io_context is stopping
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->closeSocket(); });
}

// ---- Reading the request (strand) -------------------------------------------------------------

void ClientConnection::doReadHeader() {
  keep_alive_ = false;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(state_->config.max_header_bytes));
  parser_->body_limit(state_->config.max_body_bytes);
  stream_.expires_after(std::chrono::milliseconds(state_->config.idle_timeout_ms));
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onReadHeader(ec); });
}

void ClientConnection::onReadHeader(beast::error_code ec) {
  stream_.expires_never();
  received_at_ = std::chrono::system_clock::now();
  received_steady_ = std::chrono::steady_clock::now();
  if (ec == http::error::header_limit) {
    refuseUnread(431, "request headers exceed " + std::to_string(state_->config.max_header_bytes) +
                          " bytes; send fewer or shorter headers");
    return;
  }
  if (ec == http::error::body_limit) {
    onReadBody(ec);
    return;
  }
  if (ec) {
    if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
        ec != net::error::operation_aborted) {
      refuseUnread(400, "malformed HTTP request: " + ec.message());
      return;
    }
    closeSocket();
    return;
  }
  const auto expect = (*parser_).get()[http::field::expect];
  if (!parser_->is_done() &&
      iequals(std::string_view(expect.data(), expect.size()), "100-continue")) {
    WriteItem item;
    item.kind = WriteItem::Kind::kContinue;
    writes_.push_back(std::move(item));
    doWrite();  // onWrite reads the body once the interim response is out
    return;
  }
  doReadBody();
}

void ClientConnection::doReadBody() {
  if (parser_->is_done()) {
    dispatchRequest();
    return;
  }
  stream_.expires_after(std::chrono::milliseconds(state_->config.idle_timeout_ms));
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onReadBody(ec); });
}

void ClientConnection::onReadBody(beast::error_code ec) {
  stream_.expires_never();
  if (ec == http::error::body_limit) {
    refuseUnread(413, "request body exceeds " + std::to_string(state_->config.max_body_bytes) +
                          " bytes; send a smaller request or raise --max-body-bytes");
    return;
  }
  if (ec) {
    if (ec != beast::error::timeout && ec != net::error::operation_aborted &&
        ec != http::error::end_of_stream && ec != net::error::eof) {
      refuseUnread(400, "malformed HTTP request: " + ec.message());
      return;
    }
    closeSocket();
    return;
  }
  dispatchRequest();
}

InboundRequest ClientConnection::takeRequest() {
  InboundRequest request;
  request.received_at = received_at_;
  request.received_steady = received_steady_;
  if (!parser_ || !parser_->is_header_done()) {
    request.method = "-";
    request.target = "-";
    return request;
  }
  auto message = parser_->release();
  keep_alive_ = message.keep_alive();
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  return request;
}

void ClientConnection::refuseUnread(unsigned status, const std::string& reason) {
  const auto request = takeRequest();
  keep_alive_ = false;  // the rest of the request was never read: the connection cannot go on
  watchForClose();
  answerLocally(state_->handler, request, *this, status, "error", reason);
}

void ClientConnection::dispatchRequest() {
  auto request = std::make_shared<InboundRequest>(takeRequest());
  watchForClose();
  std::size_t active = state_->active_requests.load();
  do {
    if (active >= state_->config.max_concurrent_requests) {
      answerLocally(state_->handler, *request, *this, 503, "error",
                    "the sidecar is already relaying " + std::to_string(active) +
                        " requests (--max-concurrent-requests); retry shortly");
      return;
    }
  } while (!state_->active_requests.compare_exchange_weak(active, active + 1));
  auto job = [self = shared_from_this(), state = state_, request] {
    struct Slot {
      std::atomic<std::size_t>& active;
      ~Slot() { --active; }
    } const slot{state->active_requests};
    handleRequest(state->handler, *request, *self);
  };
  if (!state_->workers.submit(std::move(job))) {
    --state_->active_requests;
    answerLocally(state_->handler, *request, *this, 503, "error", "the sidecar is shutting down");
  }
}

// Reads while the answer is produced, to notice the client leaving: EOF or an error marks the
// client gone, and the worker cancels the upstream request. Bytes that arrive meanwhile are the
// client's next request (keep-alive) and are kept for it. Uses the raw socket so that Beast's
// per-operation timeouts do not apply.
void ClientConnection::watchForClose() {
  stream_.socket().async_read_some(
      net::buffer(watch_buffer_),
      [self = shared_from_this()](beast::error_code ec, std::size_t bytes) {
        self->onWatch(ec, bytes);
      });
}

void ClientConnection::onWatch(beast::error_code ec, std::size_t bytes) {
  if (ec && !(ec == net::error::operation_aborted && reusing_)) {
    markGone();
    closeSocket();
    return;
  }
  early_bytes_.append(watch_buffer_.data(), bytes);
  if (early_bytes_.size() > state_->config.max_header_bytes + state_->config.max_body_bytes) {
    keep_alive_ = false;  // a client pipelining this much gets its answer, then a close
    early_bytes_.clear();
  }
  if (reusing_) {
    startNextRequest();
    return;
  }
  watchForClose();
}

// The answer is out and the connection stays open: parse what the client sent meanwhile first.
void ClientConnection::startNextRequest() {
  reusing_ = false;
  buffer_.clear();
  const auto room = buffer_.prepare(early_bytes_.size());
  std::memcpy(room.data(), early_bytes_.data(), early_bytes_.size());
  buffer_.commit(early_bytes_.size());
  early_bytes_.clear();
  doReadHeader();
}

}  // namespace sidecar
