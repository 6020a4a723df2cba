// The egress forwarder process (`sandbox-agent --egress-proxy PORT=SOCKET`): PID 1 binds
// 127.0.0.1:PORT and forks a child that relays every connection to the egress gateway's Unix
// socket (EgressRelay). A child process, not a thread: the agent forks code runners, and fork in
// a threaded process is unsafe. PID 1 keeps the listening socket, so while a forwarder that
// died restarts (after a growing delay: no restart storm) the port stays held and connections
// wait in its backlog. The forwarder keeps the agent's credentials (with a code user: real uid
// 0, effective uid the code user's), so code cannot signal it; it is in no process group the
// executor kills, and it holds no fd of the agent's but the listener and stderr.
// Not thread-safe: runs on the agent's event loop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/child_process.h"
#include "agent/event_loop.h"
#include "common/unique_fd.h"

namespace agent {

struct EgressProxySpec {
  std::uint16_t port = 0;   // on 127.0.0.1 inside the sandbox
  std::string socket_path;  // the gateway's Unix socket, absolute
};

// Parses "PORT=SOCKET_PATH" (PORT 1..65535 decimal; SOCKET_PATH absolute and short enough for a
// Unix socket address); nullopt when malformed.
[[nodiscard]] std::optional<EgressProxySpec> parseEgressProxy(std::string_view text);

// The delay before the first restart of a forwarder that exited; it doubles up to
// kEgressMaxRestartDelay while the forwarder keeps dying within kEgressStableRun of its start.
inline constexpr std::chrono::milliseconds kEgressRestartDelay{1000};
inline constexpr std::chrono::milliseconds kEgressMaxRestartDelay{30000};
inline constexpr std::chrono::milliseconds kEgressStableRun{30000};

class EgressForwarder {
 public:
  // Binds the port and starts the forwarder. Throws std::system_error when the port cannot be
  // bound (the message says what to do).
  EgressForwarder(EventLoop& loop, Reaper& reaper, const EgressProxySpec& spec,
                  std::chrono::milliseconds restart_delay = kEgressRestartDelay);
  ~EgressForwarder();  // stop()
  EgressForwarder(const EgressForwarder&) = delete;
  EgressForwarder& operator=(const EgressForwarder&) = delete;

  // Kills and reaps the forwarder, and starts no other. For shutdown.
  void stop() noexcept;

  // The running forwarder's pid, or -1 while it waits to be restarted.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  // The port listened on (the one asked for, or the one picked for port 0, in tests).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

 private:
  void start();
  void onExit(int wait_status);

  EventLoop& loop_;
  Reaper& reaper_;
  const std::string socket_path_;
  common::UniqueFd listener_;
  std::uint16_t port_ = 0;
  const std::chrono::milliseconds restart_delay_;
  std::chrono::milliseconds next_delay_;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_at_{};
  EventLoop::TimerId restart_timer_ = 0;
  bool stopped_ = false;
};

}  // namespace agent
