// The graceful end of a server (SIGTERM): new MCP sessions are refused at once, clients of
// running calls are told, the warm pool stops, and running tool calls (tasks included) get up to
// shutdown.grace_s to finish. Then image builds still running are stopped and no sandbox starts
// any more (SessionFactory::cancelCreations), the transport stops (cancelling the calls left) and
// every sandbox is removed. hurry() (a second signal) cuts the wait short. Thread-safe: run() on
// one thread, hurry() from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "mcp/mcp_server.h"
#include "server/session_registry.h"

namespace app {

class Drain {
 public:
  // `persist` (sessions.persist): the sessions of owners that outlive the server are saved
  // rather than removed, and the clients are told so.
  Drain(std::chrono::seconds grace, server::SessionRegistry& sessions, mcp::McpServer& protocol,
        bool persist = false)
      : grace_(grace), sessions_(sessions), protocol_(protocol), persist_(persist) {}

  // `refuse_new` stops new sessions (HTTP: 503 on initialize, /readyz failing); `stop` stops the
  // transport, after which the caller removes the sandboxes.
  void run(const std::function<void()>& refuse_new, const std::function<void()>& stop);

  void hurry() noexcept;

 private:
  // Until no tools/call runs, the grace period ends or hurry(); returns how many still run.
  std::size_t waitForCalls();

  const std::chrono::seconds grace_;
  server::SessionRegistry& sessions_;
  mcp::McpServer& protocol_;
  const bool persist_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool hurry_ = false;
};

}  // namespace app
