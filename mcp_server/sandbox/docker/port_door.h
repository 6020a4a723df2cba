// The server's end of one stream to a port inside the sandbox (agent/PROTOCOL.md, op
// "open_port"). A preview connection must not cross the agent's frame channel (it would queue
// behind executions and file transfers) nor the engine, so each gets a socket of its own: a
// listening Unix socket under a random name in the channel's directory, which the sandbox sees
// through its read-only bind mount. The agent connects to it, presents the door's token (which
// reached it over the channel, out of sandbox code's reach) and relays that connection to
// 127.0.0.1:<port>. The door takes one connection with the token and is removed at once: code
// that lists the directory and connects first is dropped, and nothing can connect afterwards.
// Not thread-safe: one door per open.
#pragma once

#include <chrono>
#include <string>

#include "common/unique_fd.h"

namespace sandbox::docker {

class PortDoor {
 public:
  // Listens on <dir>/<random name>; `container_dir` is where the sandbox sees `dir`. Throws
  // SandboxError naming what failed.
  PortDoor(const std::string& dir, const std::string& container_dir);
  ~PortDoor();  // removes the socket file
  PortDoor(const PortDoor&) = delete;
  PortDoor& operator=(const PortDoor&) = delete;

  // The socket's path inside the sandbox, and the token the agent must write first (then "\n").
  [[nodiscard]] const std::string& containerPath() const noexcept { return container_path_; }
  [[nodiscard]] const std::string& token() const noexcept { return token_; }

  // The connection that presented the token, waited for until `timeout` (others are dropped);
  // the socket file is gone afterwards. Throws SandboxError when none comes.
  [[nodiscard]] common::UniqueFd accept(std::chrono::milliseconds timeout);

 private:
  void close() noexcept;

  std::string host_path_;
  std::string container_path_;
  std::string token_;
  common::UniqueFd listener_;
};

}  // namespace sandbox::docker
