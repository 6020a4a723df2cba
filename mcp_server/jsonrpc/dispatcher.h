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

namespace jsonrpc {

struct CallContext {
  const json& id;             // the request id; null for notifications
  RequestContext& transport;  // per-message transport services (notify, peer)
};

class Dispatcher {
 public:
  using RequestHandler = std::function<json(const json& params, CallContext& ctx)>;
  using NotificationHandler = std::function<void(const json& params, CallContext& ctx)>;

  void onRequest(const std::string& method, RequestHandler handler);
  void onNotification(const std::string& method, NotificationHandler handler);

  // One message or a batch. nullopt means write nothing (notifications, client responses).
  [[nodiscard]] std::optional<json> handle(const json& message, RequestContext& ctx) const;

 private:
  [[nodiscard]] std::optional<json> handleOne(const json& message, RequestContext& ctx) const;

  std::unordered_map<std::string, RequestHandler> requests_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
};

[[nodiscard]] json makeResult(const json& id, json result);
[[nodiscard]] json makeError(const json& id, int code, const std::string& message,
                             const json& data = nullptr);

}  // namespace jsonrpc
