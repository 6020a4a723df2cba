// Requests a 2025-11-25 server sends its client while a tools/call runs (sampling/createMessage,
// elicitation/create, roots/list), on the call's own stream (Streamable HTTP: its SSE response;
// stdio: stdout), and the client's answers, which come back as JSON-RPC responses. (2026-07-28
// has no server-to-client requests: input-required results replace them.) Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/cancel_token.h"

namespace mcp {

class ClientRequests {
 public:
  using Send = std::function<void(const nlohmann::json& message)>;

  // Sends the request through `send` and waits for the client's result. Throws
  // std::runtime_error when the client answers with an error, `cancel` fires, `timeout` passes
  // or closeAll() ends the wait; the message says which.
  [[nodiscard]] nlohmann::json ask(const Send& send, const std::string& method,
                                   nlohmann::json params, CancelToken& cancel,
                                   std::chrono::milliseconds timeout);
  // A response from the client; false when it answers no pending request (unknown or late).
  bool deliver(const nlohmann::json& response);
  // The connection closed: every pending ask fails at once, later ones at the start.
  void closeAll();

 private:
  struct Pending {
    std::optional<nlohmann::json> response;
    bool ended = false;  // cancelled or closed
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace mcp
