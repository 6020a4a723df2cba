// Delivers SIGCHLD, SIGTERM, SIGINT and SIGHUP through a signalfd (works under gVisor and for
// PID 1, which the kernel otherwise shields from default-action signals). Not thread-safe.
#pragma once

#include <vector>

#include "common/unique_fd.h"

namespace agent {

using common::UniqueFd;

class SignalFd {
 public:
  // Blocks the signals for the process (children get a clean mask after fork) and opens the fd.
  // Throws std::system_error on failure. Also sets SIGPIPE to be ignored: a vanished reader must
  // surface as EPIPE, not kill the agent.
  SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_.get(); }
  // Signal numbers pending on the fd (non-blocking; empty when none).
  [[nodiscard]] std::vector<int> readPending();

 private:
  UniqueFd fd_;
};

}  // namespace agent
