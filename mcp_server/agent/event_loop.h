// A single-threaded poll(2) loop: file-descriptor watches and one-shot timers on the monotonic
// clock. Callbacks may add or remove watches and timers freely. Not thread-safe: use it from the
// thread that calls run().
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

namespace agent {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using FdCallback = std::function<void(short revents)>;
  using TimerCallback = std::function<void()>;
  using TimerId = std::uint64_t;  // 0 is never a valid id

  EventLoop() = default;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Watches `fd` for `events` (POLLIN, ...); replaces an earlier watch on the same fd.
  void watchFd(int fd, short events, FdCallback callback);
  void unwatchFd(int fd) noexcept;

  TimerId addTimer(std::chrono::milliseconds delay, TimerCallback callback);
  void cancelTimer(TimerId id) noexcept;

  // Dispatches events until stop() is called.
  void run();
  void stop() noexcept { stopped_ = true; }

 private:
  struct Watch {
    short events;
    FdCallback callback;
    std::uint64_t generation;  // tells a re-registered fd number apart from the polled one
  };
  struct Timer {
    Clock::time_point due;
    TimerCallback callback;
  };

  [[nodiscard]] int pollTimeoutMs() const;
  void runDueTimers();
  void dispatchOnce();

  std::map<int, Watch> watches_;
  std::map<TimerId, Timer> timers_;
  std::uint64_t next_generation_ = 1;
  TimerId next_timer_id_ = 1;
  bool stopped_ = false;
};

}  // namespace agent
