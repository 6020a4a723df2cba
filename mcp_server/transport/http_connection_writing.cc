// HttpConnection's writing, on its strand: one write in flight and a queue for the rest
// (responses, 100 Continue, SSE head and chunks), then the next request or the close.
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <string_view>
#include <utility>

#include "transport/http_connection.h"
#include "transport/message_util.h"
#include "transport/transport_log.h"

namespace transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// After refusing a request whose body we did not read, keep reading (and discarding) briefly so
// the client sees our response instead of a connection reset.
constexpr std::chrono::seconds kDrainTimeout{2};
constexpr std::size_t kMaxDrainBytes = std::size_t{8} * 1024 * 1024;
constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

void HttpConnection::respondError(http::status status, int code, const std::string& message,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  bool close_after, const json& id) {
  auto response = std::make_shared<Response>(status, http_version_);
  response->set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) response->set(name, value);
  response->body() = serialize(errorResponse(code, message, id));
  sendResponse(std::move(response), close_after);
}

void HttpConnection::respondJson(http::status status, const json& body,
                                 const std::string& session_id) {
  respondSerialized(status, serialize(body), session_id);
}

void HttpConnection::respondSerialized(http::status status, std::string body,
                                       const std::string& session_id) {
  auto response = std::make_shared<Response>(status, http_version_);
  response->set(http::field::content_type, "application/json");
  if (!session_id.empty()) response->set(kSessionHeader, session_id);
  response->body() = std::move(body);
  sendResponse(std::move(response), false);
}

void HttpConnection::respondEmpty(http::status status) {
  sendResponse(std::make_shared<Response>(status, http_version_), false);
}

void HttpConnection::respondPlain(const PlainResponse& plain, bool head_only) {
  auto response =
      std::make_shared<Response>(static_cast<http::status>(plain.status), http_version_);
  response->set(http::field::content_type, plain.content_type);
  response->set(http::field::cache_control, "no-store");
  for (const auto& [name, value] : plain.headers) response->set(name, value);
  response->body() = plain.body;
  response->prepare_payload();  // Content-Length of the body, also for HEAD
  if (head_only) response->body().clear();
  const bool close = !keep_alive_ || closing_;
  response->keep_alive(!close);
  enqueue(WriteItem{WriteItem::Kind::kResponse, std::move(response), nullptr, {}, true, close});
}

void HttpConnection::sendResponse(std::shared_ptr<Response> response, bool close_after) {
  const bool close = close_after || !keep_alive_ || closing_;
  response->keep_alive(!close);
  response->prepare_payload();
  enqueue(WriteItem{WriteItem::Kind::kResponse, std::move(response), nullptr, {}, true, close});
}

void HttpConnection::enqueue(WriteItem item) {
  if (closed_) return;
  writes_.push_back(std::move(item));
  if (!writing_) doWrite();
}

void HttpConnection::doWrite() {
  writing_ = true;
  WriteItem& item = writes_.front();
  stream_.expires_after(context_->options.write_timeout);
  auto handler = beast::bind_front_handler(&HttpConnection::onWrite, shared_from_this());
  switch (item.kind) {
    case WriteItem::Kind::kResponse:
      http::async_write(stream_, *item.response, std::move(handler));
      break;
    case WriteItem::Kind::kContinue:
      net::async_write(stream_, net::buffer(kContinueLine.data(), kContinueLine.size()),
                       std::move(handler));
      break;
    case WriteItem::Kind::kSseHead:
      http::async_write_header(stream_, item.sse_head->serializer, std::move(handler));
      break;
    case WriteItem::Kind::kChunk:
      net::async_write(stream_, http::make_chunk(net::buffer(item.data)), std::move(handler));
      break;
    case WriteItem::Kind::kLastChunk:
      net::async_write(stream_, http::make_chunk_last(), std::move(handler));
      break;
  }
}

void HttpConnection::onWrite(beast::error_code ec, std::size_t /*bytes*/) {
  stream_.expires_never();
  writing_ = false;
  if (ec) {
    log().debug("http {}: write failed: {}", remote_, ec.message());
    writes_.clear();
    requestAbandoned();
    closeSocket();
    return;
  }
  WriteItem done = std::move(writes_.front());
  writes_.pop_front();
  if (done.kind == WriteItem::Kind::kContinue) {
    doReadBody();
  } else if (done.ends_request) {
    afterRequest(done.close_after);
  }
  if (!writes_.empty() && !closed_ && !writing_) doWrite();
}

void HttpConnection::afterRequest(bool close_after) {
  if (close_after || closing_) {
    writes_.clear();  // nothing left belongs to a live request
    if (parser_ && !parser_->is_done()) {
      drainAndClose();
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      closeSocket();
    }
    return;
  }
  doReadHeader();
}

void HttpConnection::drainAndClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  drained_bytes_ = 0;
  stream_.expires_after(kDrainTimeout);
  doDrain();
}

void HttpConnection::doDrain() {
  stream_.async_read_some(net::buffer(drain_buffer_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t bytes) {
                            self->drained_bytes_ += bytes;
                            if (ec || self->drained_bytes_ > kMaxDrainBytes) {
                              self->stream_.expires_never();
                              self->closeSocket();
                              return;
                            }
                            self->doDrain();
                          });
}

void HttpConnection::closeSocket() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  slot_ = ConnectionLimiter::Slot();  // the descriptor is gone: its place is free
  body_reservation_.reset();
}

}  // namespace transport
