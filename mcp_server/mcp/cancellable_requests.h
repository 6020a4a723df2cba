// The requests of one connection that notifications/cancelled can reach, by JSON-RPC id. A request
// is registered when the transport admits it, before it waits for a worker or behind an earlier
// call to the same session, and stays registered while any copy of its token lives: a request that
// is dropped unanswered (the transport is shutting down) or refused before it starts leaves
// nothing behind. Thread-safe; the tokens may outlive this object.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "common/cancel_token.h"

namespace mcp {

class CancellableRequests {
 public:
  CancellableRequests();

  // A new token registered under `id`, or nullptr once closeAll() has run.
  [[nodiscard]] std::shared_ptr<CancelToken> admit(const nlohmann::json& id);

  // Cancels the request registered under `id` (each one, should a client reuse an id while it
  // runs). False when there is none: already answered, or never seen.
  bool cancel(const nlohmann::json& id);

  // Cancels every registered request; admit() returns nullptr from now on.
  void closeAll();

 private:
  struct Registry;  // shared with the tokens, which unregister themselves when they go
  std::shared_ptr<Registry> registry_;
};

}  // namespace mcp
