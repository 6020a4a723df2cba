// Transport-free JSON-RPC 2.0 dispatcher: validates envelopes, routes methods to handlers and maps
// every exception to an error response at one place. Thread-safe once registration is done
// (register all methods before the first handle()).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "jsonrpc/endpoint.h"
#include "jsonrpc/reply.h"

namespace jsonrpc {

struct CallContext {
  CallContext(const json& request_id, RequestContext& request_transport,
              std::string request_method = {})
      : id(request_id), transport(request_transport), method(std::move(request_method)) {}

  const json& id;             // the request id; null for notifications
  RequestContext& transport;  // per-message transport services (notify, peer)
  std::string method;

  // The request will be answered later through the returned Reply; whatever the handler returns
  // is then ignored. nullptr when the answer must be returned now (a batch element, or a
  // transport without RequestContext::answer_later): the handler then waits on its own thread.
  [[nodiscard]] std::shared_ptr<Reply> answerLater();
  [[nodiscard]] const std::shared_ptr<Reply>& laterReply() const noexcept { return later_; }

  bool may_answer_later = false;  // set by the dispatcher

 private:
  std::shared_ptr<Reply> later_;
};

class Dispatcher {
 public:
  using RequestHandler = std::function<json(const json& params, CallContext& ctx)>;
  using NotificationHandler = std::function<void(const json& params, CallContext& ctx)>;

  void onRequest(const std::string& method, RequestHandler handler);
  void onNotification(const std::string& method, NotificationHandler handler);
  // Client->server responses (to requests the server sent the client): passed here, else dropped.
  void onResponse(std::function<void(const json& response)> handler);

  // One message or a batch. nullopt means write nothing (notifications, client responses).
  [[nodiscard]] std::optional<json> handle(const json& message, RequestContext& ctx) const;

 private:
  [[nodiscard]] std::optional<json> handleOne(const json& message, RequestContext& ctx,
                                              bool in_batch) const;

  std::unordered_map<std::string, RequestHandler> requests_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
  std::function<void(const json& response)> responses_;
};

[[nodiscard]] json makeResult(const json& id, json result);
[[nodiscard]] json makeError(const json& id, int code, const std::string& message,
                             const json& data = nullptr);

}  // namespace jsonrpc
