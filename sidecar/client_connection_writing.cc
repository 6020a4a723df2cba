// ClientConnection's writing, on its strand: one write in flight, consecutive serialized pieces
// merged into one, then the next request on the connection or a linger and the close.
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <string_view>
#include <utility>

#include "sidecar/client_connection.h"
#include "sidecar/sidecar_log.h"

namespace sidecar {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

// After the answer, wait this long for the client to close before closing ourselves, so that a
// client still sending an unread body sees the answer instead of a reset.
constexpr std::chrono::seconds kLingerTime{2};
constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

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
