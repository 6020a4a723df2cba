// HttpConnection's routing, on its strand: a request's method, body and session decide what
// answers it, and the JSON-RPC message goes to a worker pool (http_connection_handling.cc).
#include <boost/asio/post.hpp>
#include <exception>
#include <utility>

#include "common/json_codec.h"
#include "transport/http_connection.h"
#include "transport/message_util.h"
#include "transport/modern_gate.h"
#include "transport/transport_log.h"

namespace transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

bool isInitialize(const json& message) {
  return isRequest(message) && message["method"] == "initialize";
}

// The id an HTTP-level error echoes: the request's, null for a notification or a batch.
json idOf(const json& message) { return isRequest(message) ? message["id"] : json(nullptr); }

// Ids of the registry's principal entries: never minted for a client (minted ids are hex).
constexpr std::string_view kPrincipalPrefix = "principal:";

std::string principalOwner(const jsonrpc::Principal& principal) {
  return std::string(kPrincipalPrefix) + principal.name;
}

}  // namespace

void HttpConnection::handleRequest() {
  ++request_serial_;
  streaming_ = false;
  if (isPlainGet(parser_->get(), context_->guard)) {
    handlePlainGet();
  } else if (parser_->get().method() == http::verb::delete_) {
    handleDelete();
  } else {
    handlePost();  // the guard let through only POST and DELETE to the MCP path
  }
}

// Health, readiness and metrics: off the I/O thread on a pool of their own, so that neither slow
// tool-call control work nor a slow handler delays the others' probes; the answer comes back to
// the strand.
void HttpConnection::handlePlainGet() {
  const auto& request = parser_->get();
  const std::string target(request.target());
  const auto handler = context_->options.get_endpoints.find(target.substr(0, target.find('?')));
  const bool head_only = request.method() == http::verb::head;
  awaiting_handler_ = true;
  auto job = [self = shared_from_this(), serial = request_serial_, handler = handler->second,
              head_only] {
    PlainResponse plain;
    try {
      plain = handler();
    } catch (const std::exception& e) {
      plain = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what(), {}};
    }
    net::post(self->stream_.get_executor(), [self, serial, plain = std::move(plain), head_only] {
      if (serial != self->request_serial_ || self->closed_) return;
      self->awaiting_handler_ = false;
      self->respondPlain(plain, head_only);
    });
  };
  if (!context_->probe_pool.submit(std::move(job))) {
    awaiting_handler_ = false;
    respondPlain({503, "text/plain; charset=utf-8", "shutting down\n", {}}, head_only);
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
  const auto& request = parser_->get();
  const ModernHeaders headers{request["MCP-Protocol-Version"], request["Mcp-Method"],
                              request["Mcp-Name"]};
  // A 2026-07-28 request's version is the modern gate's (-32022 names the supported ones).
  const bool modern = session_id.empty() && isModernRequest(message, headers);
  if (auto rejection = unsupportedVersion(request); rejection && !modern) {
    respondJson(rejection->status,
                errorResponse(rejection->code, rejection->message, idOf(message)));
    return;
  }
  if (!session_id.empty()) {
    auto lease = session_id.starts_with(kPrincipalPrefix)
                     ? std::nullopt
                     : context_->sessions.acquire(session_id, principal_.name,
                                                  SessionRegistry::Clock::now());
    if (!lease) {
      respondJson(http::status::not_found,
                  errorResponse(kSessionNotFound,
                                "Session not found: it expired or was deleted; send a new "
                                "initialize request without Mcp-Session-Id",
                                idOf(message)));
      return;
    }
    const std::size_t bound = context_->options.max_requests_in_flight_per_session;
    if (bound != 0 && lease->inFlight() > bound && !isLightweight(message)) {
      respondJson(http::status::too_many_requests,
                  errorResponse(kServerError,
                                "Too Many Requests: this MCP session has " + std::to_string(bound) +
                                    " requests in flight (http.max_requests_in_flight_per_"
                                    "session); wait for their answers or cancel ones you no "
                                    "longer need (notifications/cancelled), then retry",
                                idOf(message)));
      return;
    }
    auto endpoint = lease->endpoint();
    dispatch(std::move(message), std::move(endpoint), std::move(lease), session_id, false);
    return;
  }
  if (modern) {
    const auto find = [&request](const std::string& name) -> std::optional<std::string_view> {
      const auto field = request.find(name);
      if (field == request.end()) return std::nullopt;
      return std::string_view(field->value());
    };
    if (auto refused =
            refuseModernRequest(message, headers, context_->options.param_headers, find)) {
      respondJson(static_cast<http::status>(refused->status), refused->body);
      return;
    }
    auto lease = principalLease();
    if (!lease) {
      respondJson(http::status::internal_server_error,
                  errorResponse(kInternalError,
                                "Internal error: cannot open the principal's "
                                "endpoint",
                                message["id"]));
      return;
    }
    auto endpoint = lease->endpoint();
    dispatch(std::move(message), std::move(endpoint), std::move(lease), principalOwner(principal_),
             false);
    return;
  }
  if (isInitialize(message)) {
    if (context_->draining) {
      respondError(http::status::service_unavailable, kServerError,
                   "Service Unavailable: this server is shutting down and takes no new MCP "
                   "sessions; send initialize again (a load balancer routes it to another "
                   "replica)",
                   {{"Retry-After", "5"}}, false, idOf(message));
      return;
    }
    dispatch(std::move(message), nullptr, std::nullopt, {}, true);
    return;
  }
  respondJson(http::status::bad_request,
              errorResponse(kServerError,
                            "Bad Request: missing Mcp-Session-Id header; send an initialize "
                            "request first and repeat the Mcp-Session-Id it returns",
                            idOf(message)));
}

std::optional<SessionRegistry::Lease> HttpConnection::principalLease() {
  const auto now = SessionRegistry::Clock::now();
  const std::string owner = principalOwner(principal_);
  std::lock_guard lock(context_->principal_mutex);  // one endpoint per principal, ever
  if (auto lease = context_->sessions.acquire(owner, principal_.name, now)) return lease;
  try {
    auto endpoint = context_->factory->open(owner, principal_);
    context_->sessions.addPrincipalEndpoint(owner, principal_.name, std::move(endpoint), now);
  } catch (const std::exception& e) {
    log().error("http {}: opening principal {}'s endpoint failed: {}", remote_, principal_.name,
                e.what());
    return std::nullopt;
  }
  return context_->sessions.acquire(owner, principal_.name, now);
}

void HttpConnection::handleDelete() {
  const std::string session_id(parser_->get()[kSessionHeader]);
  if (session_id.starts_with(kPrincipalPrefix)) {
    respondJson(http::status::not_found,
                errorResponse(kSessionNotFound, "Session not found: it expired or was deleted"));
    return;
  }
  if (session_id.empty()) {
    respondJson(http::status::bad_request,
                errorResponse(kServerError,
                              "Bad Request: DELETE needs the Mcp-Session-Id header of the "
                              "session to end"));
    return;
  }
  auto endpoint = context_->sessions.remove(session_id, principal_.name);
  if (!endpoint) {
    respondJson(http::status::not_found,
                errorResponse(kSessionNotFound, "Session not found: it expired or was deleted"));
    return;
  }
  log().info("http {}: session {}... ended by DELETE", remote_, session_id.substr(0, 8));
  awaiting_handler_ = true;
  const auto serial = request_serial_;
  auto self = shared_from_this();
  // Closing removes the client's sandboxes (engine calls): a request worker's job, so that the
  // control pool stays free for cancellations and new sessions.
  if (!context_->pool.submit([self, serial, endpoint] {
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
  const json id = idOf(message);  // for a refusal after `message` moved into the job
  // std::function needs a copyable job; the lease is shared by the copies and released with them.
  auto shared_lease = std::make_shared<std::optional<SessionRegistry::Lease>>(std::move(lease));
  // The pool is shared by every MCP session: the key names this one too.
  std::string key;
  std::shared_ptr<CancelToken> cancel;  // cancellable from now on, even while it waits behind key
  if (!lightweight && endpoint) {
    if (auto own = endpoint->orderingKey(message); !own.empty()) key = session_id + '\n' + own;
    cancel = endpoint->admit(message);
  }
  hang_up_ = lightweight ? nullptr : std::make_shared<CancelToken>();
  cancel_on_hang_up_ = session_id.starts_with(kPrincipalPrefix) ? cancel : nullptr;
  auto job = [self = shared_from_this(), serial = request_serial_, message = std::move(message),
              endpoint = std::move(endpoint), shared_lease, sid = session_id, opens_session, cancel,
              hang_up = hang_up_, principal = principal_] {
    if (opens_session) {
      self->runInitialize(serial, message, principal);
    } else {
      self->runRequest(serial, message, *endpoint, sid, {cancel, hang_up, shared_lease});
    }
  };
  // A cancellation must reach the endpoint even while every request worker is busy, and a new
  // client's initialize (quick: no sandbox yet) must never queue behind other clients' work.
  common::WorkerPool& pool = lightweight || opens_session ? context_->control_pool : context_->pool;
  if (!pool.submit(std::move(job), key, std::move(cancel))) {
    awaiting_handler_ = false;
    respondError(http::status::service_unavailable, kServerError,
                 "Service Unavailable: the server is shutting down", {}, true, id);
    return;
  }
  if (hang_up_) watchForHangUp(request_serial_);
}

}  // namespace transport
