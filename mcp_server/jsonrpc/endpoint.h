// What a transport needs from the protocol layer, and nothing about sockets or pipes.
// A transport opens one Endpoint per client connection (stdio: one for the process; HTTP: one per
// Mcp-Session-Id) and feeds it parsed JSON messages. Endpoints are thread-safe: handle() is called
// concurrently from worker threads (a long tools/call must not delay a ping or a cancellation).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/cancel_token.h"
#include "jsonrpc/errors.h"

namespace jsonrpc {

using json = nlohmann::json;

// Per-message context supplied by the transport.
struct RequestContext {
  // Sends a server->client message (a notification such as notifications/progress or
  // notifications/message) tied to the request being handled. Over HTTP the first call switches
  // the POST response to an SSE stream; over stdio it is written to stdout. May be empty.
  std::function<void(const json& message)> notify;
  // True when `notify` may still be used after the response was sent (stdio: one stream carries
  // everything). False where a request's notifications ride on its own response (HTTP).
  bool notify_outlives_request = false;
  // Identifies the authenticated principal/connection; used for logging only.
  std::string peer;
  // The token Endpoint::admit() returned for this message, if any: the request's cancellation.
  std::shared_ptr<CancelToken> cancel;

  // Answers given later (jsonrpc::Reply): set by transports that can deliver a response from any
  // thread after handle() returned, so that a request that waits holds no worker thread. Takes
  // the response, or nullopt for none. Empty: every answer is handle()'s return value.
  std::function<void(std::optional<json> response)> answer_later;
  // Runs a job on one of the transport's worker threads, for a request whose wait is over and
  // whose work may block; false when the transport is shutting down. Set with answer_later.
  std::function<bool(std::function<void()> job)> run_on_worker;
  // Fires when the connection that would carry the answer is gone (an HTTP client hung up while
  // its request waited). A wait ends then; work the request started goes on (MCP: a disconnection
  // is not a cancellation). May be null.
  std::shared_ptr<CancelToken> abandoned;
  // Set by the dispatcher: handle() returned nullopt because the answer goes to answer_later.
  bool answered_later = false;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Handles one JSON-RPC message or batch. Returns the response (object or array) to send, or
  // nullopt when nothing is to be written (notifications, responses, batches of those).
  // Never throws: protocol faults become JSON-RPC error responses.
  virtual std::optional<json> handle(const json& message, RequestContext& ctx) = 0;

  // The client went away (stdio EOF, HTTP DELETE, idle expiry): release what it owns.
  virtual void close() = 0;

  // Requests with the same non-empty key are handled one at a time, in the order they arrived
  // (MCP: tool calls naming the same sandbox session); one whose admit() token is cancelled while
  // it waits is handled at once, out of turn. Empty: no ordering.
  [[nodiscard]] virtual std::string orderingKey(const json& /*message*/) const { return {}; }

  // Called by the transport on its I/O thread as each request arrives (must not block), before it
  // waits for a worker or behind an earlier request with the same orderingKey, so that
  // notifications/cancelled reaches it while it waits. Returns the request's cancel token, or
  // nullptr when it cannot be cancelled. The request stays cancellable while any copy of the token
  // lives: the transport keeps one until the request is answered or dropped, and passes it in
  // RequestContext::cancel.
  [[nodiscard]] virtual std::shared_ptr<CancelToken> admit(const json& /*message*/) {
    return nullptr;
  }

  // Negotiated protocol version once initialize succeeded, else empty.
  [[nodiscard]] virtual std::string protocolVersion() const = 0;
};

// Who a client acts for, as its transport authenticated it.
struct Principal {
  inline static constexpr const char* kLocal = "local";      // no token is configured
  inline static constexpr const char* kDefault = "default";  // the one --token-file token
  std::string name = kLocal;
  // Named by the tokens file: its quotas hold across all its MCP sessions and stateless requests.
  bool from_tokens_file = false;
};

class EndpointFactory {
 public:
  virtual ~EndpointFactory() = default;
  // `owner` is a stable, unguessable identity for the connection (the HTTP Mcp-Session-Id,
  // "stdio", or "principal:<name>" for a principal's stateless requests); resources created
  // through the endpoint belong to it. `principal` is who authenticated it.
  virtual std::shared_ptr<Endpoint> open(const std::string& owner, const Principal& principal) = 0;
  // The local principal's.
  std::shared_ptr<Endpoint> open(const std::string& owner) { return open(owner, Principal{}); }
};

// Parse errors are the transport's to report because the dispatcher only sees parsed JSON.
[[nodiscard]] inline json parseErrorResponse(const std::string& detail) {
  return json{{"jsonrpc", "2.0"},
              {"id", nullptr},
              {"error", {{"code", kParseError}, {"message", "Parse error: " + detail}}}};
}

}  // namespace jsonrpc
