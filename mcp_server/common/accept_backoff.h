// What an accept loop does after a failed accept(). Out of descriptors (EMFILE, ENFILE) or kernel
// memory, an immediate retry fails again at once: a server at its fd limit was seen writing
// 700,000 "accept failed" lines in 3 s at 50% CPU. So the loop pauses kPause before the next
// attempt (the pending connection waits in the listen backlog) and logs once per burst of
// failures, with the count when accepting works again.
// Describe the error with std::strerror(ec.value()), not ec.message(): out of descriptors is no
// time for a virtual call that allocates (and a sanitizer build checks a first virtual call
// through a pipe, which then fails and aborts the process).
// Not thread-safe: owned by one accept loop (its strand).
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <utility>

namespace common {

class AcceptBackoff {
 public:
  static constexpr std::chrono::milliseconds kPause{100};

  // Errors of one aborted connection (it reset while in the backlog): the next accept is
  // independent, retry at once. Anything else may repeat on every attempt: pause.
  [[nodiscard]] static bool isTransient(int error) noexcept {
    return error == ECONNABORTED || error == EINTR || error == EAGAIN || error == EPROTO ||
           error == EPERM;  // EPERM: a firewall refused this one connection
  }

  // Counts a failure; true for the first one of a burst (the one to log).
  [[nodiscard]] bool onFailure() noexcept { return failures_++ == 0; }

  // After a successful accept: how many attempts the burst that just ended had failed (0: none).
  [[nodiscard]] std::uint64_t onSuccess() noexcept { return std::exchange(failures_, 0); }

 private:
  std::uint64_t failures_ = 0;
};

}  // namespace common
