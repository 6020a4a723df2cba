// The agent's preview connections (PROTOCOL.md, op "open_port"): each request connects a port
// inside the sandbox to a host Unix socket (PortConnection) and relays it on the agent's own
// EventLoop, so PID 1 stays single-threaded and a slow connect never holds up other requests.
// Bytes go over that socket, not over the frame channel, where they would queue behind
// executions and file transfers. Every socket is watched only for what it waits for at the time.
// Not thread-safe: use it from the loop's thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/event_loop.h"
#include "agent/port_connection.h"
#include "protocol/agent_protocol.h"

namespace agent {

struct PortRelayLimits {
  // Open (or opening) connections at once; past it a request is refused.
  std::size_t max_connections = 256;
  // How long the connects (to the port, then to the host socket) may take together.
  std::chrono::milliseconds connect_timeout{3000};
  std::size_t buffer_bytes = std::size_t{128} * 1024;  // per direction of each connection
};

class PortRelays {
 public:
  // Called once per open(): nullopt when the connection relays, else the reply's "error".
  using Done = std::function<void(const std::optional<std::string>& error)>;

  explicit PortRelays(EventLoop& loop, PortRelayLimits limits = {});
  PortRelays(const PortRelays&) = delete;
  PortRelays& operator=(const PortRelays&) = delete;
  ~PortRelays();

  // Starts a preview connection; `done` may run before open() returns (a connect that completes
  // or fails at once, or the limit).
  void open(const protocol::OpenPortRequest& request, Done done);
  // Closes every connection (before a checkpoint, at shutdown); the ones still connecting are
  // answered with `reason`, after every socket is closed.
  void closeAll(const std::string& reason);
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  using Key = std::uint64_t;  // what callbacks hold: an entry may be gone when they run
  using Side = PortConnection::Side;
  struct Entry {
    std::unique_ptr<PortConnection> connection;
    Done done;                     // until the request is answered
    EventLoop::TimerId timer = 0;  // gives up connecting
    std::array<int, 2> watched_fd{-1, -1};
    std::array<short, 2> watched_events{0, 0};
  };

  void onReady(Key key, Side side, short revents);
  void onConnectTimeout(Key key);
  // After `key`'s connection did something: answers its request once it is past connecting,
  // then watches what it waits for, or removes it once it is over.
  void afterChange(Key key);
  void syncWatches(Key key, Entry& entry);
  void unwatch(Entry& entry) noexcept;

  EventLoop& loop_;
  PortRelayLimits limits_;
  std::map<Key, Entry> entries_;
  Key next_key_ = 1;
};

}  // namespace agent
