// The process's termination signals (SIGINT, SIGTERM, SIGHUP), handled on one thread of their
// own: the first signal starts a graceful drain, a second one ends at once. The constructor
// blocks the signals in the calling thread, so construct it before any other thread starts
// (they inherit the mask). SIGPIPE is ignored.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <functional>
#include <mutex>
#include <thread>

namespace app {

class SignalWatcher {
 public:
  SignalWatcher();
  ~SignalWatcher();  // finish() and join
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Starts the watching thread: `first` runs on the first signal, `second` on the next one.
  // Both run on the watching thread; `first` may block (a drain), `second` must not wait for it.
  void onSignals(std::function<void()> first, std::function<void()> second);

  // The transport has stopped (by a drain or by itself): later signals are ignored, and a drain
  // under way is joined, so nothing it uses may go before this returns. Make the drain return
  // soon first (Drain::hurry). Idempotent.
  void finish() noexcept;

 private:
  static constexpr int kWakeSignal = SIGUSR1;  // ends the wait when the server stopped by itself

  void watch(const std::function<void()>& first, const std::function<void()>& second);

  sigset_t set_{};
  std::mutex mutex_;  // done_ and drain_: the watching thread starts the drain, finish() joins it
  bool done_ = false;
  std::thread thread_;
  std::thread drain_;  // runs `first`, so that a second signal is seen while it runs
};

}  // namespace app
