// The server's end of an agent's socket channel (agent/PROTOCOL.md, op "channel"): a directory
// <root>/<name>/ holding one listening Unix socket, bind-mounted read-only into the sandbox at
// kContainerDir. Frames then travel agent ↔ server over that socket (gVisor --host-uds=open)
// instead of through the engine's attach stream, which relays every byte through dockerd and
// containerd-shim.
// It accepts one connection, and only one that presents this listener's random token as its
// first frame (the token reaches the agent over its stdin, which sandbox code cannot read); the
// socket file is removed as soon as that connection is accepted, so nothing else in the sandbox
// can connect afterwards. rearm() listens again, with a new token, for the agent's next channel
// (after a checkpoint). The directory goes away with this object. Not thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "common/unique_fd.h"
#include "sandbox/docker/container_config.h"

namespace sandbox::docker {

class ChannelListener {
 public:
  static constexpr const char* kContainerDir = kChannelContainerPath;
  static constexpr const char* kSocketName = "agent.sock";

  // Creates <root>/<name>/agent.sock, listening. Throws SandboxError naming what failed.
  ChannelListener(const std::string& root, const std::string& name);
  ~ChannelListener();
  ChannelListener(const ChannelListener&) = delete;
  ChannelListener& operator=(const ChannelListener&) = delete;

  [[nodiscard]] const std::string& hostDir() const noexcept { return dir_; }
  [[nodiscard]] static std::string containerSocketPath() {
    return std::string(kContainerDir) + "/" + kSocketName;
  }
  [[nodiscard]] const std::string& token() const noexcept { return token_; }

  // Waits up to `timeout` for the connection that presents the token (others are dropped), then
  // stops listening and removes the socket file. Throws SandboxError when none comes.
  [[nodiscard]] common::UniqueFd accept(std::chrono::milliseconds timeout);
  // Listens again at the same path with a new token. Throws SandboxError naming what failed.
  void rearm();

 private:
  void listen();
  void stopListening() noexcept;

  std::string dir_;
  std::string socket_path_;
  std::string token_;
  common::UniqueFd listener_;
};

}  // namespace sandbox::docker
