#include "app/drain.h"

#include <spdlog/spdlog.h>

#include <future>
#include <string>

namespace app {

void Drain::run(const std::function<void()>& refuse_new, const std::function<void()>& stop) {
  refuse_new();
  spdlog::info(
      "draining: new MCP sessions are refused; {} call(s) running get up to {} s "
      "(shutdown.grace_s)",
      protocol_.callsInFlight(), grace_.count());
  const std::string saved =
      persist_ ? " Sessions of stdio clients and of MCP 2026-07-28 principals are saved instead, "
                 "and come back with their state when this server starts again."
               : "";
  protocol_.announce("This sandbox-mcp server is shutting down: running executions have up to " +
                     std::to_string(grace_.count()) +
                     " s to finish, then its sandboxes are removed." + saved +
                     " Save what you need (e.g. download_file); to go on, start a new MCP session "
                     "(initialize), which a load balancer sends to another replica.");
  // No new pooled sandboxes; the ready ones go (container removals: seconds), beside the wait.
  auto pool_stopped = std::async(std::launch::async, [this] { sessions_.factory().stop(); });
  const std::size_t left = waitForCalls();
  // Past the grace period nothing new may start: image builds still running stop now (a build
  // step can run for minutes), and no sandbox is created any more, also from a finished build.
  sessions_.factory().cancelCreations();
  if (left > 0) {
    spdlog::warn("draining: {} call(s) still running are cancelled", left);
  } else {
    spdlog::info("draining: no call running; stopping");
  }
  pool_stopped.wait();
  stop();
}

void Drain::hurry() noexcept {
  {
    const std::lock_guard lock(mutex_);
    hurry_ = true;
  }
  wake_.notify_all();
}

std::size_t Drain::waitForCalls() {
  // Calls end on worker threads that know nothing of the drain: poll the count.
  constexpr std::chrono::milliseconds kPoll{20};
  const auto deadline = std::chrono::steady_clock::now() + grace_;
  std::unique_lock lock(mutex_);
  while (!hurry_) {
    const std::size_t running = protocol_.callsInFlight();
    if (running == 0 || std::chrono::steady_clock::now() >= deadline) return running;
    wake_.wait_for(lock, kPoll);
  }
  return protocol_.callsInFlight();
}

}  // namespace app
