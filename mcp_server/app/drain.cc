#include "app/drain.h"

#include <spdlog/spdlog.h>

#include <string>

namespace app {

void Drain::run(const std::function<void()>& refuse_new, const std::function<void()>& stop) {
  refuse_new();
  sessions_.factory().stop();  // no new pooled sandboxes; the ready ones go now
  const std::size_t running = sessions_.executionSlots().inUse();
  spdlog::info(
      "draining: new MCP sessions are refused; {} execution(s) running get up to {} s "
      "(shutdown.grace_s)",
      running, grace_.count());
  protocol_.announce("This sandbox-mcp server is shutting down: running executions have up to " +
                     std::to_string(grace_.count()) +
                     " s to finish, then its sandboxes are removed. Save what you need (e.g. "
                     "download_file); to go on, start a new MCP session (initialize), which a "
                     "load balancer sends to another replica.");
  const std::size_t left = waitForExecutions();
  if (left > 0) {
    spdlog::warn("draining: {} execution(s) still running are cancelled", left);
  } else {
    spdlog::info("draining: no execution running; stopping");
  }
  stop();
}

void Drain::hurry() noexcept {
  {
    const std::lock_guard lock(mutex_);
    hurry_ = true;
  }
  wake_.notify_all();
}

std::size_t Drain::waitForExecutions() {
  // Executions end on worker threads that know nothing of the drain: poll the count.
  constexpr std::chrono::milliseconds kPoll{20};
  const auto deadline = std::chrono::steady_clock::now() + grace_;
  std::unique_lock lock(mutex_);
  while (!hurry_) {
    const std::size_t running = sessions_.executionSlots().inUse();
    if (running == 0 || std::chrono::steady_clock::now() >= deadline) return running;
    wake_.wait_for(lock, kPoll);
  }
  return sessions_.executionSlots().inUse();
}

}  // namespace app
