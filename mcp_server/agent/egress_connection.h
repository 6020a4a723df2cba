// One connection through the egress forwarder: a TCP client inside the sandbox and its own
// connection to the egress gateway's Unix socket, relayed byte for byte both ways (BytePump:
// bounded buffers, backpressure, half-closes passed on); the connection is finished when both
// directions have ended, or on an error. When the gateway cannot be reached, the client gets a
// 502 answer instead.
// Not thread-safe: driven by EgressRelay's loop (level-triggered epoll).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/byte_pump.h"
#include "common/unique_fd.h"

namespace agent {

using common::UniqueFd;

// What the relay hands every connection: where the gateway is and how much it may buffer.
struct EgressUpstream {
  sockaddr_un address{};
  socklen_t address_length = 0;
  std::string path;                                    // for messages
  std::size_t buffer_bytes = std::size_t{128} * 1024;  // per direction
  // How long a connection waits for the gateway's listen backlog to have room (connect says
  // EAGAIN) or for a connect in progress, before the client gets a 502.
  std::chrono::milliseconds connect_patience{1000};
  // How long a refused client may take to read the 502 and close, after which it is dropped.
  std::chrono::milliseconds refusal_linger{2000};
};

// Resolves `path` into an EgressUpstream; nullopt when it does not fit in sockaddr_un.
[[nodiscard]] std::optional<EgressUpstream> makeEgressUpstream(const std::string& path);

// The answer a client gets when the gateway is not reachable (connect failed with `error`).
[[nodiscard]] std::string badGatewayAnswer(const std::string& socket_path, int error);

class EgressConnection {
 public:
  enum class Side : std::uint8_t { kClient, kUpstream };
  using Clock = std::chrono::steady_clock;

  // Takes the accepted client and starts connecting to the gateway.
  EgressConnection(UniqueFd client, const EgressUpstream& upstream, Clock::time_point now);
  EgressConnection(const EgressConnection&) = delete;
  EgressConnection& operator=(const EgressConnection&) = delete;

  // Moves what `side`'s readiness (epoll events) allows.
  void onReady(Side side, std::uint32_t events, Clock::time_point now);
  // Called once `deadline()` has passed.
  void onDeadline(Clock::time_point now);

  [[nodiscard]] bool finished() const noexcept { return state_ == State::kFinished; }
  // The epoll events `side` waits for (0: none; -1 fd: no socket on that side).
  [[nodiscard]] std::uint32_t wantedEvents(Side side) const noexcept;
  [[nodiscard]] int fd(Side side) const noexcept;
  [[nodiscard]] std::optional<Clock::time_point> deadline() const noexcept { return deadline_; }
  // The errno of the failed connect when the client was (or is being) refused, else 0.
  [[nodiscard]] int refusedWith() const noexcept { return refused_with_; }

 private:
  enum class State : std::uint8_t {
    kWaitingForBacklog,  // connect said EAGAIN: retried at deadline_
    kConnecting,         // connect in progress: the upstream socket becomes writable
    kRelaying,
    kRefusing,  // writing the 502, then reading the client until it closes
    kFinished,
  };

  void connectUpstream(Clock::time_point now);
  void finishConnect(Clock::time_point now);
  void startRelaying();
  void refuse(int error, Clock::time_point now);
  void continueRefusal();
  void finish() noexcept;

  const EgressUpstream& upstream_;
  UniqueFd client_;
  UniqueFd upstream_fd_;
  State state_ = State::kWaitingForBacklog;
  std::optional<BytePump> relay_;  // first: the client, second: the gateway; while relaying
  std::string refusal_;            // the 502 answer still to write
  int refused_with_ = 0;
  std::optional<Clock::time_point> deadline_;
  Clock::time_point give_up_at_;  // of connecting
};

}  // namespace agent
