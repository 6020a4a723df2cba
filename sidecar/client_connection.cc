#include "sidecar/client_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <utility>

#include "sidecar/sidecar_log.h"

namespace sidecar {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

// Upper bound on response bytes waiting for the client: past it the worker (and so libcurl, and
// so the upstream's TCP window) waits.
constexpr std::size_t kMaxQueuedBytes = std::size_t{256} * 1024;
// After the answer, wait this long for the client to close before closing ourselves, so that a
// client still sending an unread body sees the answer instead of a reset.
constexpr std::chrono::seconds kLingerTime{2};
constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

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

// ---- ResponseSink (worker thread) ---------------------------------------------------------------

void ClientConnection::sendComplete(unsigned status, HeaderList headers, std::string content_type,
                                    std::string body) {
  auto response = std::make_shared<http::response<http::string_body>>();
  response->result(status);
  response->version(11);
  for (auto& [name, value] : headers) response->insert(name, value);
  response->set(http::field::content_type, content_type);
  response->keep_alive(keep_alive_);
  response->body() = std::move(body);
  response->prepare_payload();
  WriteItem item;
  item.kind = WriteItem::Kind::kComplete;
  item.complete = std::move(response);
  item.last = true;
  post(std::move(item));
}

void ClientConnection::sendHead(unsigned status, HeaderList headers, bool has_body) {
  http::response_header<> header;
  header.result(status);
  header.version(11);
  for (auto& [name, value] : headers) header.insert(name, value);
  if (!keep_alive_) header.set(http::field::connection, "close");
  if (has_body) header.set(http::field::transfer_encoding, "chunked");
  std::ostringstream text;
  text << header;  // the status line and fields, ending with the empty line
  if (has_body) {
    // Held back until the first body bytes (or the end): they leave in the same write.
    pending_head_ = text.str();
    return;
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.data = text.str();
  item.last = true;
  post(std::move(item));
}

bool ClientConnection::sendChunk(std::string data) {
  if (data.empty()) return !clientGone();  // an empty chunk would end the chunked body
  {
    std::unique_lock lock(flow_mutex_);
    flow_changed_.wait(lock, [this] { return gone_.load() || queued_bytes_ < kMaxQueuedBytes; });
    if (gone_.load()) return false;
    queued_bytes_ += data.size();
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.flow_bytes = data.size();
  char size_line[24];
  const int length = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  item.data.reserve(pending_head_.size() + static_cast<std::size_t>(length) + data.size() + 2);
  item.data.append(std::exchange(pending_head_, {}));
  item.data.append(size_line, static_cast<std::size_t>(length));
  item.data.append(data);
  item.data.append("\r\n");
  post(std::move(item));
  return true;
}

void ClientConnection::endStream() {
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.data = std::exchange(pending_head_, {}) + "0\r\n\r\n";
  item.last = true;
  post(std::move(item));
}

void ClientConnection::abortStream() {
  if (!pending_head_.empty()) {  // the head the client was promised, then the cut
    WriteItem head;
    head.kind = WriteItem::Kind::kBytes;
    head.data = std::exchange(pending_head_, {});
    post(std::move(head));
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kAbort;
  post(std::move(item));
}

bool ClientConnection::clientGone() const noexcept { return gone_.load(); }

// ---- Writing (strand) ---------------------------------------------------------------------------

void ClientConnection::post(WriteItem item) {
  net::post(stream_.get_executor(), [self = shared_from_this(), item = std::move(item)]() mutable {
    if (self->closed_) return;
    self->writes_.push_back(std::move(item));
    if (!self->writing_) self->doWrite();
  });
}

void ClientConnection::doWrite() {
  WriteItem& item = writes_.front();
  if (item.kind == WriteItem::Kind::kAbort) {  // everything before it is written
    writes_.clear();
    closeSocket();
    return;
  }
  writing_ = true;
  stream_.expires_after(std::chrono::milliseconds(state_->config.idle_timeout_ms));
  auto handler = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->onWrite(ec);
  };
  switch (item.kind) {
    case WriteItem::Kind::kComplete:
      items_in_write_ = 1;
      http::async_write(stream_, *item.complete, std::move(handler));
      break;
    case WriteItem::Kind::kContinue:
      items_in_write_ = 1;
      net::async_write(stream_, net::buffer(kContinueLine.data(), kContinueLine.size()),
                       std::move(handler));
      break;
    case WriteItem::Kind::kBytes:
      write_buffer_.clear();
      items_in_write_ = 0;
      for (const auto& queued : writes_) {
        if (queued.kind != WriteItem::Kind::kBytes) break;
        write_buffer_.append(queued.data);
        ++items_in_write_;
        if (queued.last) break;
      }
      net::async_write(stream_, net::buffer(write_buffer_), std::move(handler));
      break;
    case WriteItem::Kind::kAbort:
      break;
  }
}

void ClientConnection::onWrite(beast::error_code ec) {
  stream_.expires_never();
  writing_ = false;
  bool continue_sent = false;
  bool last = false;
  std::size_t flow_bytes = 0;
  for (std::size_t i = 0; i < items_in_write_; ++i) {
    const WriteItem& done = writes_.front();
    continue_sent = done.kind == WriteItem::Kind::kContinue;
    last = last || done.last;
    flow_bytes += done.flow_bytes;
    writes_.pop_front();
  }
  items_in_write_ = 0;
  if (flow_bytes > 0) {
    {
      const std::lock_guard lock(flow_mutex_);
      queued_bytes_ -= flow_bytes;
    }
    flow_changed_.notify_all();
  }
  if (ec) {
    log().debug("sidecar client: write failed: {}", ec.message());
    writes_.clear();
    markGone();
    closeSocket();
    return;
  }
  if (continue_sent) {
    doReadBody();
    return;
  }
  if (last) {
    if (keep_alive_.load() && !gone_.load()) {
      // Cancel the watch; its handler (on this thread, after this) reads the next request.
      reusing_ = true;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      return;
    }
    linger();
    return;
  }
  if (!writes_.empty()) doWrite();
}

void ClientConnection::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(Protocol::socket::shutdown_send, ignored);
  linger_timer_.expires_after(kLingerTime);
  linger_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->closeSocket();
  });
}

void ClientConnection::markGone() noexcept {
  {
    const std::lock_guard lock(flow_mutex_);
    gone_.store(true);
  }
  flow_changed_.notify_all();
}

void ClientConnection::closeSocket() {
  if (closed_) return;
  closed_ = true;
  markGone();
  linger_timer_.cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(Protocol::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace sidecar
