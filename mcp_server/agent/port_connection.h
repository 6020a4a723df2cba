// One preview connection (PROTOCOL.md, op "open_port"): a TCP connection to a server that sandbox
// code runs on 127.0.0.1, and a connection to the server's Unix socket on the host (its "door",
// reached through the channel directory's bind mount), which opens with the door's token. Then
// bytes go both ways unchanged (BytePump) until both directions have ended.
// Both connects are non-blocking: PID 1 never waits in a syscall for a slow server; a connect in
// progress completes when its socket becomes writable, and PortRelays gives up on it after a
// timeout. Every failure is a sentence for the reply's "error" that says what to do.
// Not thread-safe: driven by PortRelays on the agent's EventLoop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/byte_pump.h"
#include "common/unique_fd.h"
#include "protocol/agent_protocol.h"

namespace agent {

class PortConnection {
 public:
  enum class Side : std::uint8_t {
    kSandbox,  // TCP, to 127.0.0.1:port
    kHost,     // Unix, to the server's door
  };
  enum class State : std::uint8_t {
    kConnecting,  // a connect is in progress (on connectingSide())
    kRelaying,    // both connected and the token written: the request succeeded
    kFailed,      // before relaying; error() says why; the sockets are closed
    kFinished,    // the relay is over; the sockets are closed
  };

  // Starts connecting; state() says how far it got. `buffer_bytes`: per direction.
  PortConnection(protocol::OpenPortRequest request, std::size_t buffer_bytes);
  PortConnection(const PortConnection&) = delete;
  PortConnection& operator=(const PortConnection&) = delete;

  // Moves what `side`'s readiness (poll revents) allows.
  void onReady(Side side, short revents);
  // Connecting took longer than `waited`: gives up (kFailed).
  void onConnectTimeout(std::chrono::milliseconds waited);

  [[nodiscard]] State state() const noexcept { return state_; }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] std::uint16_t port() const noexcept { return request_.port; }
  // -1: no socket on that side (yet, or any more).
  [[nodiscard]] int fd(Side side) const noexcept;
  // The poll events `side` waits for; 0: none (do not watch it).
  [[nodiscard]] short wantedEvents(Side side) const noexcept;

 private:
  void connectSandbox();
  void connectHost();
  void finishConnect();
  void sendToken();
  void failSandbox(int error);
  void failHost(const std::string& what, int error);
  void fail(std::string error);
  void finish() noexcept;

  protocol::OpenPortRequest request_;
  std::size_t buffer_bytes_;
  common::UniqueFd sandbox_;
  common::UniqueFd host_;
  State state_ = State::kConnecting;
  Side connecting_ = Side::kSandbox;
  std::optional<BytePump> pump_;  // first: the sandbox side, second: the host side
  std::string error_;
};

}  // namespace agent
