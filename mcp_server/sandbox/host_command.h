// Runs a program on the server's host and waits for it, with a deadline: for the runtime's own
// commands the engine's API lacks (runsc checkpoint, pause, resume). Output is captured (stdout
// and stderr together, the last bytes kept) for the error a caller reports.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace sandbox {

struct HostCommandResult {
  int exit_code = -1;  // -1: killed at the deadline or by a signal
  bool timed_out = false;
  std::string output;  // stdout and stderr interleaved; at most kMaxOutputBytes, the tail
};

inline constexpr std::size_t kMaxHostCommandOutputBytes = std::size_t{16} * 1024;

// Runs argv[0] (an absolute path) with `argv`, a fixed PATH and nothing else of the server's
// environment, no stdin, and no other descriptor of the server. Past `timeout` the program is
// killed (SIGKILL) and reaped. Throws std::system_error when it cannot be started.
HostCommandResult runHostCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout);

}  // namespace sandbox
