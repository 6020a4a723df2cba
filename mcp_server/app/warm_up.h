// A stdio server's warm pool starts at its client's first request. Over stdio, a client of MCP
// 2026-07-28 (the TypeScript SDK v2, pinned or in auto mode) first runs a short-lived copy of the
// server command, asks it server/discover and stops it (stdin closed, SIGTERM, SIGKILL 1 s later);
// only then does it start the server it talks to. That copy must not start sandboxes it would have
// to remove on its way out (container starts and removals take seconds under gVisor; killed, it
// would leave them behind): its pool waits for a request other than server/discover, or for
// kStdioPoolStartDelay, whichever comes first.
// Thread-safety: the endpoints are the wrapped ones' (handle() from any thread).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "jsonrpc/endpoint.h"

namespace app {

// How long a stdio server's warm pool waits for a client request before it fills anyway (a client
// that connected and has said nothing yet). A discover probe is stopped well within it: ~130 ms
// after it began serving, on this 2-core machine.
inline constexpr std::chrono::milliseconds kStdioPoolStartDelay{1000};

// True when `message` (one message or a batch) holds a request or notification other than
// server/discover: what a discover probe never sends. Responses do not count.
[[nodiscard]] bool isClientActivity(const jsonrpc::json& message);

// The protocol's endpoints, unchanged but for `on_client`, which runs on the first message for
// which isClientActivity() holds (once per endpoint, on the thread that handles it; must not
// block).
class WarmUpOnClient final : public jsonrpc::EndpointFactory {
 public:
  WarmUpOnClient(std::shared_ptr<jsonrpc::EndpointFactory> inner, std::function<void()> on_client);
  using jsonrpc::EndpointFactory::open;
  std::shared_ptr<jsonrpc::Endpoint> open(const std::string& owner,
                                          const jsonrpc::Principal& principal) override;

 private:
  std::shared_ptr<jsonrpc::EndpointFactory> inner_;
  std::function<void()> on_client_;
};

}  // namespace app
