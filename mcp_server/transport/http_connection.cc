#include "transport/http_connection.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <exception>
#include <string_view>
#include <utility>

#include "common/json_codec.h"
#include "common/text.h"
#include "transport/message_util.h"
#include "transport/sse_writer.h"
#include "transport/transport_log.h"

namespace transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr int kInvalidRequest = -32600;
constexpr int kInternalError = -32603;
constexpr int kServerError = -32000;
constexpr int kSessionNotFound = -32001;
constexpr std::uint32_t kHeaderLimitBytes = 16 * 1024;
// After refusing a request whose body we did not read, keep reading (and discarding) briefly so
// the client sees our response instead of a connection reset.
constexpr std::chrono::seconds kDrainTimeout{2};
constexpr std::size_t kMaxDrainBytes = std::size_t{8} * 1024 * 1024;
constexpr std::size_t kIdleReadBytes = 4096;
constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::string_view kSessionHeader = "Mcp-Session-Id";

using common::iequals;

bool isInitialize(const json& message) {
  return isRequest(message) && message["method"] == "initialize";
}

// Worker threads serialize answers (a download_file answer is up to 48 MiB of JSON) so the I/O
// thread only copies bytes.
std::optional<std::string> serializeAnswer(const std::optional<json>& answer) {
  if (!answer) return std::nullopt;
  return serialize(*answer);
}

bool isSuccess(const json& response) {
  return response.is_object() && response.contains("result") && !response.contains("error");
}

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
  if (first_request_ || buffer_.size() != 0) {
    first_request_ = false;
    readHeader();
    return;
  }
  // Keep-alive: wait up to the idle timeout for the next request to begin; its header then has
  // the header timeout, however slowly it arrives.
  stream_.expires_after(context_->options.idle_timeout);
  stream_.async_read_some(
      buffer_.prepare(kIdleReadBytes),
      beast::bind_front_handler(&HttpConnection::onIdleData, shared_from_this()));
}

void HttpConnection::onIdleData(beast::error_code ec, std::size_t bytes) {
  stream_.expires_never();
  buffer_.commit(bytes);
  if (ec) {
    closeSocket();  // idle timeout, the client closed, or shutdown
    return;
  }
  readHeader();
}

void HttpConnection::readHeader() {
  stream_.expires_after(context_->options.header_timeout);
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

// ---- Routing ---------------------------------------------------------------------------------

void HttpConnection::handleRequest() {
  ++request_serial_;
  streaming_ = false;
  if (parser_->get().method() == http::verb::delete_) {
    handleDelete();
  } else {
    handlePost();  // the guard let through only POST and DELETE
  }
}

// Small bodies parse right here (microseconds); a large one (up to http.max_body_bytes: seconds of
// parsing) goes to the parse pool so the I/O thread keeps serving everyone else.
void HttpConnection::handlePost() {
  auto& request = parser_->get();
  std::string session_id(request[kSessionHeader]);
  if (request.body().size() < context_->options.inline_parse_max_bytes) {
    onBodyParsed(parseBody(request.body()), session_id);
    return;
  }
  awaiting_handler_ = true;  // shutdown() waits for the answer
  auto job = [self = shared_from_this(), serial = request_serial_, body = std::move(request.body()),
              session_id]() mutable {
    ParsedBody parsed = parseBody(body);
    body = std::string();  // free the text before the tree is handled
    net::post(self->stream_.get_executor(),
              [self, serial, session_id, parsed = std::move(parsed)]() mutable {
                if (serial != self->request_serial_ || self->closed_) return;
                self->awaiting_handler_ = false;
                self->onBodyParsed(std::move(parsed), session_id);
              });
  };
  if (!context_->parse_pool.submit(std::move(job))) {
    awaiting_handler_ = false;
    respondError(http::status::service_unavailable, kServerError,
                 "Service Unavailable: the server is shutting down", {}, true);
  }
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

HttpConnection::ParsedBody HttpConnection::parseBody(const std::string& body) {
  ParsedBody parsed;
  try {
    parsed.message = common::parseJson(body);  // refuses nesting past common::kMaxJsonDepth
  } catch (const json::parse_error& e) {
    parsed.error = jsonrpc::parseErrorResponse(e.what());
    return parsed;
  } catch (const std::exception& e) {  // e.g. out of memory: answer instead of leaving it hanging
    parsed.error = errorResponse(kInternalError, std::string("Internal error: ") + e.what());
    return parsed;
  }
  if (!parsed.message.is_object() && !parsed.message.is_array()) {
    parsed.error = errorResponse(kInvalidRequest,
                                 "Invalid Request: the body must be a JSON-RPC object or array");
  }
  return parsed;
}

void HttpConnection::onBodyParsed(ParsedBody parsed, const std::string& session_id) {
  body_reservation_.reset();  // the body text is gone; only its (bounded) tree remains
  if (parsed.error) {
    respondJson(http::status::bad_request, *parsed.error);
    return;
  }
  json& message = parsed.message;
  if (!session_id.empty()) {
    auto lease = context_->sessions.acquire(session_id, SessionRegistry::Clock::now());
    if (!lease) {
      respondJson(http::status::not_found,
                  errorResponse(kSessionNotFound,
                                "Session not found: it expired or was deleted; send a new "
                                "initialize request without Mcp-Session-Id"));
      return;
    }
    auto endpoint = lease->endpoint();
    dispatch(std::move(message), std::move(endpoint), std::move(lease), session_id, false);
    return;
  }
  if (isInitialize(message)) {
    dispatch(std::move(message), nullptr, std::nullopt, {}, true);
    return;
  }
  respondJson(http::status::bad_request,
              errorResponse(kServerError,
                            "Bad Request: missing Mcp-Session-Id header; send an initialize "
                            "request first and repeat the Mcp-Session-Id it returns"));
}

void HttpConnection::handleDelete() {
  const std::string session_id(parser_->get()[kSessionHeader]);
  if (session_id.empty()) {
    respondJson(http::status::bad_request,
                errorResponse(kServerError,
                              "Bad Request: DELETE needs the Mcp-Session-Id header of the "
                              "session to end"));
    return;
  }
  auto endpoint = context_->sessions.remove(session_id);
  if (!endpoint) {
    respondJson(http::status::not_found,
                errorResponse(kSessionNotFound, "Session not found: it expired or was deleted"));
    return;
  }
  log().info("http {}: session {}... ended by DELETE", remote_, session_id.substr(0, 8));
  awaiting_handler_ = true;
  const auto serial = request_serial_;
  auto self = shared_from_this();
  if (!context_->control_pool.submit([self, serial, endpoint] {
        endpoint->close();
        net::post(self->stream_.get_executor(), [self, serial] { self->onSessionClosed(serial); });
      })) {
    endpoint->close();  // shutting down: nobody else will close it
    onSessionClosed(serial);
  }
}

void HttpConnection::dispatch(json message, std::shared_ptr<jsonrpc::Endpoint> endpoint,
                              std::optional<SessionRegistry::Lease> lease,
                              const std::string& session_id, bool opens_session) {
  awaiting_handler_ = true;
  const bool lightweight = !opens_session && isLightweight(message);
  // std::function needs a copyable job; the lease is shared by the copies and released with them.
  auto shared_lease = std::make_shared<std::optional<SessionRegistry::Lease>>(std::move(lease));
  // The pool is shared by every MCP session: the key names this one too.
  std::string key;
  std::shared_ptr<CancelToken> cancel;  // cancellable from now on, even while it waits behind key
  if (!lightweight && endpoint) {
    if (auto own = endpoint->orderingKey(message); !own.empty()) key = session_id + '\n' + own;
    cancel = endpoint->admit(message);
  }
  auto job = [self = shared_from_this(), serial = request_serial_, message = std::move(message),
              endpoint = std::move(endpoint), shared_lease, sid = session_id, opens_session,
              cancel] {
    if (opens_session) {
      self->runInitialize(serial, message);
    } else {
      self->runRequest(serial, message, *endpoint, sid, cancel);
    }
  };
  // A cancellation must reach the endpoint even while every request worker is busy.
  WorkerPool& pool = lightweight ? context_->control_pool : context_->pool;
  if (!pool.submit(std::move(job), key, std::move(cancel))) {
    awaiting_handler_ = false;
    respondError(http::status::service_unavailable, kServerError,
                 "Service Unavailable: the server is shutting down", {}, true);
  }
}

// Worker thread: touches only thread-safe state (context_, the executor, const members).
void HttpConnection::runRequest(std::uint64_t serial, const json& message,
                                jsonrpc::Endpoint& endpoint, const std::string& session_id,
                                std::shared_ptr<CancelToken> cancel) {
  auto self = shared_from_this();
  jsonrpc::RequestContext ctx;
  ctx.cancel = std::move(cancel);
  ctx.peer = peerLabel(session_id);
  ctx.notify = [self, serial](const json& notification) {
    net::post(self->stream_.get_executor(),
              [self, serial, notification] { self->onNotify(serial, notification); });
  };
  std::optional<std::string> body = serializeAnswer(handleSafely(endpoint, message, ctx));
  net::post(stream_.get_executor(), [self, serial, body = std::move(body)]() mutable {
    self->onHandled(serial, std::move(body), {});
  });
}

// Worker thread: opens a session under a fresh id and keeps it only if initialize succeeds.
void HttpConnection::runInitialize(std::uint64_t serial, const json& message) {
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
      session_id = newSessionId();
      endpoint = context_->factory->open(session_id);
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
        !context_->sessions.add(session_id, endpoint, SessionRegistry::Clock::now(),
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
                               const std::string& new_session_id) {
  if (request_serial != request_serial_) return;
  awaiting_handler_ = false;
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
  respondSerialized(http::status::ok, std::move(*result), new_session_id);
}

void HttpConnection::onSessionClosed(std::uint64_t request_serial) {
  if (request_serial != request_serial_) return;
  awaiting_handler_ = false;
  respondEmpty(http::status::no_content);
}

// ---- Writing ---------------------------------------------------------------------------------

void HttpConnection::respondError(http::status status, int code, const std::string& message,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  bool close_after) {
  auto response = std::make_shared<Response>(status, http_version_);
  response->set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) response->set(name, value);
  response->body() = serialize(errorResponse(code, message));
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

std::string HttpConnection::peerLabel(const std::string& session_id) const {
  return "http " + remote_ + (session_id.empty() ? "" : " session " + session_id.substr(0, 8));
}

}  // namespace transport
