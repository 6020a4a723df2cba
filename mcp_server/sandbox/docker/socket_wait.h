// Blocking waits on a socket with a deadline: what the server's ends of the agent's host sockets
// (the channel, a port's stream) need to take a connection that must present a token.
// Thread-safe (no state).
#pragma once

#include <chrono>
#include <cstddef>

namespace sandbox::docker {

using SocketClock = std::chrono::steady_clock;

// Waits until `fd` is readable (or hung up) or `deadline` passes; false on timeout or error.
[[nodiscard]] bool waitReadable(int fd, SocketClock::time_point deadline);

// Reads exactly `size` bytes before `deadline`; false on timeout, end of stream or error.
[[nodiscard]] bool readExactly(int fd, char* out, std::size_t size,
                               SocketClock::time_point deadline);

}  // namespace sandbox::docker
