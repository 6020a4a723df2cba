// The egress forwarder's loop: accepts TCP connections on 127.0.0.1 and relays each to its own
// connection to the egress gateway's Unix socket (EgressConnection), on one thread with a
// level-triggered epoll. Package managers and curl cannot use a Unix-socket proxy; this turns
// the socket into a loopback port. It is plumbing, not a security boundary: code could connect to
// the socket itself, and the gateway enforces every rule.
// Not thread-safe: one thread calls run(); stop it through the stop fd.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/egress_connection.h"
#include "common/accept_backoff.h"
#include "common/unique_fd.h"

namespace agent {

// Past this many open connections a new one is accepted and closed at once.
inline constexpr std::size_t kMaxEgressConnections = 256;

// A non-blocking, close-on-exec TCP socket listening on 127.0.0.1:`port` (0: any free port),
// SO_REUSEADDR, backlog 128. Throws std::system_error saying what failed and what to do.
[[nodiscard]] UniqueFd listenOnLoopback(std::uint16_t port);
// The port `listener` is bound to (0 when it cannot be read).
[[nodiscard]] std::uint16_t boundPort(int listener) noexcept;

class EgressRelay {
 public:
  using Clock = std::chrono::steady_clock;

  // `listener`: from listenOnLoopback. `upstream`: the gateway (makeEgressUpstream).
  EgressRelay(UniqueFd listener, EgressUpstream upstream,
              std::size_t max_connections = kMaxEgressConnections);
  EgressRelay(const EgressRelay&) = delete;
  EgressRelay& operator=(const EgressRelay&) = delete;
  ~EgressRelay();

  // Serves until `stop_fd` (when >= 0) becomes readable or hangs up. Throws std::system_error
  // when epoll itself fails.
  void run(int stop_fd = -1);

 private:
  enum class TagKind : std::uint8_t { kListener, kStop, kClient, kUpstream };
  struct Entry;
  // What an epoll event points at.
  struct Tag {
    TagKind kind;
    Entry* entry;  // for kClient and kUpstream
  };
  // A connection and what epoll knows of its two sockets.
  struct Entry {
    std::unique_ptr<EgressConnection> connection;
    std::array<Tag, 2> tags;
    std::array<int, 2> registered_fd{-1, -1};
    std::array<std::uint32_t, 2> registered_events{0, 0};
    bool refusal_noted = false;  // its 502 was counted for the log
  };

  void acceptClients(Clock::time_point now);
  void dispatch(const epoll_event& event, Clock::time_point now);
  void runDeadlines(Clock::time_point now);
  // After `entry`'s connection did something: logs a refusal, updates what epoll watches.
  void afterChange(Entry& entry, Clock::time_point now);
  // Makes epoll watch what `entry`'s sockets wait for (and nothing for a socket that waits for
  // nothing: a hung-up socket would otherwise wake the loop for ever).
  void syncInterest(Entry& entry);
  void watchListener(bool on);
  void removeFinished();
  [[nodiscard]] int epollTimeoutMs(Clock::time_point now) const;

  UniqueFd epoll_;
  UniqueFd listener_;
  EgressUpstream upstream_;
  std::size_t max_connections_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Tag listener_tag_{TagKind::kListener, nullptr};
  Tag stop_tag_{TagKind::kStop, nullptr};
  bool listener_watched_ = false;
  std::optional<Clock::time_point> resume_accepting_at_;  // after EMFILE and the like
  common::AcceptBackoff accept_backoff_;
  common::AcceptBackoff refusal_log_;  // one line per burst of refused clients, with a count
  bool stopped_ = false;
};

}  // namespace agent
