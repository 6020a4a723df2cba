#include "app/signal_watcher.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <utility>

namespace app {

SignalWatcher::SignalWatcher() {
  sigemptyset(&set_);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, kWakeSignal}) sigaddset(&set_, signal);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

SignalWatcher::~SignalWatcher() {
  finish();
  if (thread_.joinable()) {
    pthread_kill(thread_.native_handle(), kWakeSignal);
    thread_.join();
  }
}

void SignalWatcher::onSignals(std::function<void()> first, std::function<void()> second) {
  thread_ = std::thread(
      [this, first = std::move(first), second = std::move(second)] { watch(first, second); });
}

void SignalWatcher::finish() noexcept {
  std::thread drain;
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
    drain = std::move(drain_);
  }
  if (drain.joinable()) drain.join();
}

void SignalWatcher::watch(const std::function<void()>& first, const std::function<void()>& second) {
  int received = 0;
  while (sigwait(&set_, &received) == 0) {
    if (received == kWakeSignal) return;
    const std::lock_guard lock(mutex_);
    if (done_) return;
    if (!drain_.joinable()) {
      spdlog::info("received signal {}: draining (a second signal stops at once)", received);
      drain_ = std::thread(first);
      continue;
    }
    spdlog::warn("received signal {} again: stopping now", received);
    second();  // Drain::hurry: quick, and never waits for the drain thread
    return;
  }
}

}  // namespace app
