// Relays bytes both ways between two connected non-blocking stream sockets, as the egress
// forwarder (egress_connection.h) and the preview relay (port_connection.h) do. Each direction
// has one bounded buffer, allocated on first use and freed once the direction has ended, and
// reads again only when that buffer is drained: a slow reader slows its writer, and nothing
// queues without bound. A side's EOF is passed on with shutdown(SHUT_WR) on the other side; the
// relay is over once both directions have ended, or at the first error or reset.
// Readiness comes level-triggered, as poll(2) or epoll(7) bits (their values are the same on
// Linux). The sockets stay the caller's: it closes them once the relay is over.
// Not thread-safe: one event loop drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace agent {

class BytePump {
 public:
  enum class Side : std::uint8_t { kFirst, kSecond };

  // `first` and `second`: the connected sockets; `buffer_bytes`: per direction.
  BytePump(int first, int second, std::size_t buffer_bytes) noexcept;
  BytePump(const BytePump&) = delete;
  BytePump& operator=(const BytePump&) = delete;

  // Moves what `side`'s readiness (`events`: POLLIN, POLLOUT, POLLHUP, POLLERR) allows. False
  // once the relay is over (both directions ended, or an error or reset): close both sockets.
  [[nodiscard]] bool onReady(Side side, std::uint32_t events);
  // The events `side`'s socket waits for. 0: none, so stop watching it: a hung-up socket would
  // otherwise be reported ready for ever and spin the loop.
  [[nodiscard]] std::uint32_t wantedEvents(Side side) const noexcept;

 private:
  // One direction: bytes read from one socket wait here until the other has taken them all.
  struct Direction {
    std::unique_ptr<char[]> buffer;  // allocated on first use
    std::size_t begin = 0;
    std::size_t end = 0;
    bool eof = false;    // the source reached EOF (or can send nothing more)
    bool ended = false;  // EOF passed on, or the destination can take nothing more

    [[nodiscard]] bool hasPending() const noexcept { return begin < end; }
    [[nodiscard]] bool wantsRead() const noexcept { return !eof && !ended && !hasPending(); }
  };

  // Moves bytes from `from` to `to` until neither can go on; false on an error.
  [[nodiscard]] bool pump(Direction& direction, int from, int to);
  [[nodiscard]] int fd(Side side) const noexcept { return side == Side::kFirst ? first_ : second_; }

  int first_;
  int second_;
  std::size_t buffer_bytes_;
  Direction first_to_second_;
  Direction second_to_first_;
};

}  // namespace agent
