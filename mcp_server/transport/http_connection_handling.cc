// HttpConnection's handlers: the JSON-RPC message handled on a worker thread (a session opened
// for initialize), and its notifications and answer brought back to the strand, where they become
// a JSON response or an SSE stream.
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <exception>
#include <utility>

#include "jsonrpc/protocol_era.h"
#include "transport/http_connection.h"
#include "transport/message_util.h"
#include "transport/modern_gate.h"
#include "transport/sse_writer.h"
#include "transport/transport_log.h"

namespace transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

// Worker threads serialize answers (a download_file answer is up to 48 MiB of JSON) so the I/O
// thread only copies bytes.
std::optional<std::string> serializeAnswer(const std::optional<json>& answer) {
  if (!answer) return std::nullopt;
  return serialize(*answer);
}

// A 2026-07-28 request's errors carry their HTTP status (404 for an unknown method, 400 for a
// missing client capability); 2025 answers are always 200.
http::status statusOf(const std::optional<json>& answer, bool modern) {
  if (!answer || !modern) return http::status::ok;
  return static_cast<http::status>(modernAnswerStatus(*answer));
}

bool isSuccess(const json& response) {
  return response.is_object() && response.contains("result") && !response.contains("error");
}

}  // namespace

// Worker thread: touches only thread-safe state (context_, the executor, const members).
void HttpConnection::runRequest(std::uint64_t serial, const json& message,
                                jsonrpc::Endpoint& endpoint, const std::string& session_id,
                                const RequestHolds& holds) {
  auto self = shared_from_this();
  jsonrpc::RequestContext ctx;
  ctx.cancel = holds.cancel;
  ctx.abandoned = holds.hang_up;
  ctx.peer = peerLabel(session_id);
  ctx.notify = [self, serial](const json& notification) {
    net::post(self->stream_.get_executor(),
              [self, serial, notification] { self->onNotify(serial, notification); });
  };
  // A request that waits is answered from whichever thread ends the wait; until then it holds
  // its session (and its place in the session's requests in flight), not this thread.
  const bool modern =
      mcp::era::isSingleRequest(message) && mcp::era::isModern(mcp::era::paramsOf(message));
  ctx.answer_later = [self, serial, holds, modern](const std::optional<json>& answer) {
    net::post(self->stream_.get_executor(), [self, serial, body = serializeAnswer(answer),
                                             status = statusOf(answer, modern)]() mutable {
      self->onHandled(serial, std::move(body), {}, status);
    });
  };
  ctx.run_on_worker = [context = context_](std::function<void()> job) {
    return context->pool.submit(std::move(job));
  };
  const std::optional<json> answer = handleSafely(endpoint, message, ctx);
  if (ctx.answered_later) return;
  net::post(stream_.get_executor(), [self, serial, body = serializeAnswer(answer),
                                     status = statusOf(answer, modern)]() mutable {
    self->onHandled(serial, std::move(body), {}, status);
  });
}

// Worker thread: opens a session under a fresh id and keeps it only if initialize succeeds.
void HttpConnection::runInitialize(std::uint64_t serial, const json& message,
                                   const jsonrpc::Principal& principal) {
  auto self = shared_from_this();
  std::string session_id;
  std::shared_ptr<jsonrpc::Endpoint> endpoint;
  std::optional<json> result;
  const std::size_t max_sessions = context_->options.max_sessions;
  const auto tooMany = [&] {
    // At most one line per 10 s: refusals may come as fast as a peer can send them.
    static std::atomic<std::int64_t> last_warned_s{0};
    const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                   SessionRegistry::Clock::now().time_since_epoch())
                                   .count();
    std::int64_t last = last_warned_s.load();
    if (now_s - last >= 10 && last_warned_s.compare_exchange_strong(last, now_s)) {
      log().warn("http {}: initialize refused: {} MCP sessions are open (http.max_sessions)",
                 remote_, max_sessions);
    }
    return errorResponse(kServerError,
                         "Server busy: " + std::to_string(max_sessions) +
                             " MCP sessions are open (http.max_sessions). End sessions you no "
                             "longer use (HTTP DELETE), or retry once idle ones expire.",
                         message["id"]);
  };
  try {
    if (max_sessions != 0 && context_->sessions.size() >= max_sessions) {
      result = tooMany();
    } else {
      session_id = newSessionId(context_->options.session_route_tag);
      endpoint = context_->factory->open(session_id, principal);
    }
  } catch (const std::exception& e) {
    log().error("http {}: opening a session failed: {}", remote_, e.what());
    result = errorResponse(kInternalError,
                           std::string("Internal error: cannot open a session: ") + e.what(),
                           message["id"]);
  }
  if (endpoint) {
    jsonrpc::RequestContext ctx;
    ctx.peer = peerLabel(session_id);
    // Nothing may precede the initialize result: its headers carry the session id.
    ctx.notify = [](const json&) {};
    result = handleSafely(*endpoint, message, ctx);
    if (result && isSuccess(*result) &&
        !context_->sessions.add(session_id, principal.name, endpoint, SessionRegistry::Clock::now(),
                                max_sessions)) {
      result = tooMany();  // others were opened meanwhile
    }
    if (result && isSuccess(*result)) {
      log().info("http {}: session {}... opened", remote_, session_id.substr(0, 8));
    } else {
      endpoint->close();
      session_id.clear();
    }
  } else {
    session_id.clear();
  }
  net::post(stream_.get_executor(),
            [self, serial, body = serializeAnswer(result), session_id]() mutable {
              self->onHandled(serial, std::move(body), session_id);
            });
}

std::optional<json> HttpConnection::handleSafely(jsonrpc::Endpoint& endpoint, const json& message,
                                                 jsonrpc::RequestContext& ctx) const {
  try {
    return endpoint.handle(message, ctx);
  } catch (const std::exception& e) {  // Endpoint::handle must not throw; contain it if it does
    log().error("http {}: handling a message failed: {}", remote_, e.what());
    return errorResponse(kInternalError, std::string("Internal error: ") + e.what(),
                         isRequest(message) ? message["id"] : json(nullptr));
  }
}

void HttpConnection::onNotify(std::uint64_t request_serial, const json& message) {
  if (request_serial != request_serial_ || !awaiting_handler_ || closed_) {
    log().debug("http {}: dropped a notification sent after its request finished", remote_);
    return;
  }
  if (http_version_ < 11) return;  // HTTP/1.0 has no chunked encoding: no stream to put it on
  if (!streaming_) {
    streaming_ = true;
    stream_id_ = context_->next_stream_id.fetch_add(1);
    next_event_ = 1;
    auto head = std::make_shared<WriteItem::SseHead>();
    head->header.version(11);
    head->header.result(http::status::ok);
    head->header.set(http::field::content_type, "text/event-stream");
    head->header.set(http::field::cache_control, "no-cache");
    head->header.keep_alive(keep_alive_ && !closing_);
    head->header.chunked(true);
    enqueue(WriteItem{WriteItem::Kind::kSseHead, nullptr, std::move(head), {}, false, false});
  }
  const std::string id = std::to_string(stream_id_) + "-" + std::to_string(next_event_++);
  enqueue(WriteItem{WriteItem::Kind::kChunk, nullptr, nullptr,
                    formatSseEvent(id, "message", serialize(message)), false, false});
}

void HttpConnection::onHandled(std::uint64_t request_serial, std::optional<std::string> result,
                               const std::string& new_session_id, http::status status) {
  if (request_serial != request_serial_) return;
  awaiting_handler_ = false;
  hang_up_.reset();
  cancel_on_hang_up_.reset();
  if (closed_) return;  // the client hung up while it waited: nobody to answer
  if (streaming_) {
    streaming_ = false;
    if (result) {
      const std::string id = std::to_string(stream_id_) + "-" + std::to_string(next_event_++);
      enqueue(WriteItem{WriteItem::Kind::kChunk, nullptr, nullptr,
                        formatSseEvent(id, "message", *result), false, false});
    }
    const bool close = !keep_alive_ || closing_;
    enqueue(WriteItem{WriteItem::Kind::kLastChunk, nullptr, nullptr, {}, true, close});
    return;
  }
  if (!result) {
    respondEmpty(http::status::accepted);  // only notifications/responses: nothing to answer
    return;
  }
  respondSerialized(status, std::move(*result), new_session_id);
}

void HttpConnection::onSessionClosed(std::uint64_t request_serial) {
  if (request_serial != request_serial_) return;
  awaiting_handler_ = false;
  respondEmpty(http::status::no_content);
}

void HttpConnection::watchForHangUp(std::uint64_t request_serial) {
  stream_.socket().async_wait(net::socket_base::wait_read,
                              [self = shared_from_this(), request_serial](beast::error_code ec) {
                                self->onReadableWhileHandling(ec, request_serial);
                              });
}

void HttpConnection::onReadableWhileHandling(beast::error_code ec, std::uint64_t request_serial) {
  if (ec || closed_ || request_serial != request_serial_ || !awaiting_handler_) return;
  char byte = 0;
  const ssize_t peeked =
      ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (peeked > 0) return;  // the client sent more (its next request): it is still there
  if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    watchForHangUp(request_serial);
    return;
  }
  log().debug("http {}: the client hung up while its request was being handled", remote_);
  requestAbandoned();
  closeSocket();
}

void HttpConnection::requestAbandoned() {
  if (!awaiting_handler_) return;
  if (hang_up_) hang_up_->cancel();
  if (cancel_on_hang_up_) {
    log().info("http {}: a 2026-07-28 request's response stream closed: cancelling it", remote_);
    cancel_on_hang_up_->cancel();
  }
}

std::string HttpConnection::peerLabel(const std::string& session_id) const {
  return "http " + remote_ + (session_id.empty() ? "" : " session " + session_id.substr(0, 8));
}

}  // namespace transport
