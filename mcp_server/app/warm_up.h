// Start-up work that needs the engine (the readiness checks, removing what an earlier server left,
// then filling the warm pool) runs on a thread of its own (StartUp), and over stdio it waits for a
// client. A client of MCP 2026-07-28 over stdio (the TypeScript SDK v2, pinned or in auto mode)
// first runs a short-lived copy of the server command, asks it server/discover and stops it
// (stdin closed, SIGTERM, SIGKILL 1 s later); only then does it start the server it talks to. That
// copy must answer at once and exit at once: no engine request, no sandbox to remove on its way
// out. So the work begins at the first message other than server/discover, or kStdioStartDelay
// after the start; server/discover is answered at once, and every other message waits until the
// work is done (GatedEndpoints). If it fails (no engine, runtime or image), those messages are
// answered with its reason (what to fix) and the server stops with exit status 1: the engine is
// always checked before the first sandbox is made.
// Thread-safety: every member of both classes may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "jsonrpc/endpoint.h"

namespace app {

// How long a stdio server waits for its client's first request before it does its start-up work
// anyway (a client that connected and has said nothing yet). A discover probe is stopped well
// within it: ~50 ms after it began serving, on this 2-core machine.
inline constexpr std::chrono::milliseconds kStdioStartDelay{1000};

// True when `message` (one message or a batch) holds a request or notification other than
// server/discover: what a discover probe never sends. Responses do not count.
[[nodiscard]] bool isClientActivity(const jsonrpc::json& message);

class StartUp {
 public:
  // Returns "" when the server can serve, else why not and what to do; may throw (the exception's
  // message is the reason). Runs at most once, on this object's thread.
  using Work = std::function<std::string()>;

  // The work begins after `delay`, or at begin() or await() if sooner.
  StartUp(Work work, std::chrono::milliseconds delay);
  ~StartUp();  // stop()
  StartUp(const StartUp&) = delete;
  StartUp& operator=(const StartUp&) = delete;

  void begin();
  // Begins the work if it has not begun, waits for it and returns its verdict ("": ready).
  [[nodiscard]] std::string await();
  // Runs `on_failure` once the work failed (at once if it already has): e.g. stop the transport.
  void onFailure(std::function<void()> on_failure);
  // The work ran and failed (not: it never began because the server stopped first).
  [[nodiscard]] bool failed();
  // The work will not begin any more; waits for work under way. Idempotent.
  void stop() noexcept;

 private:
  void run();

  Work work_;
  const std::chrono::milliseconds delay_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool begun_ = false;
  bool done_ = false;
  bool ran_ = false;  // the work ran (done_ without it: stopped before it began)
  bool stopping_ = false;
  std::string failure_;
  std::function<void()> on_failure_;
  std::thread thread_;
};

// The protocol's endpoints, behind the start-up: a message for which isClientActivity() holds
// begins the start-up work and waits for it (in admit() and handle(), so the transport's reader
// keeps the client's order); once it failed, requests get its reason as a JSON-RPC error.
class GatedEndpoints final : public jsonrpc::EndpointFactory {
 public:
  GatedEndpoints(std::shared_ptr<jsonrpc::EndpointFactory> inner, StartUp& start_up);
  using jsonrpc::EndpointFactory::open;
  std::shared_ptr<jsonrpc::Endpoint> open(const std::string& owner,
                                          const jsonrpc::Principal& principal) override;

 private:
  std::shared_ptr<jsonrpc::EndpointFactory> inner_;
  StartUp& start_up_;
};

}  // namespace app
