// What an accept loop does after a failed accept(). Out of descriptors (EMFILE, ENFILE) or kernel
// memory, an immediate retry fails again at once: a server at its fd limit was seen writing
// 700,000 "accept failed" lines in 3 s at 50% CPU. So the loop pauses kPause before the next
// attempt (the pending connection waits in the listen backlog), and logs the first failure and
// then at most one line per kLogEvery with the count: under a flood every freed descriptor is
// taken again at once, so failures and successes alternate and "once per burst" alone could
// still mean a line per connection.
// Describe the error with std::strerror(ec.value()), not ec.message(): out of descriptors is no
// time for a virtual call that allocates.
// Not thread-safe: owned by one accept loop (its strand).
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace common {

class AcceptBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPause{100};
  static constexpr std::chrono::seconds kLogEvery{10};

  // Errors of one aborted connection (it reset while in the backlog): the next accept is
  // independent, retry at once. Anything else may repeat on every attempt: pause.
  [[nodiscard]] static bool isTransient(int error) noexcept {
    return error == ECONNABORTED || error == EINTR || error == EAGAIN || error == EPROTO ||
           error == EPERM;  // EPERM: a firewall refused this one connection
  }

  // Counts a failure. When it is time for a log line: the failures it reports (this one and
  // those since the last line).
  [[nodiscard]] std::optional<std::uint64_t> onFailure(Clock::time_point now) noexcept {
    ++unlogged_;
    if (logged_once_ && now - last_log_ < kLogEvery) return std::nullopt;
    logged_once_ = true;
    last_log_ = now;
    return std::exchange(unlogged_, 0);
  }

 private:
  std::uint64_t unlogged_ = 0;
  bool logged_once_ = false;
  Clock::time_point last_log_{};
};

}  // namespace common
