#include "agent/byte_pump.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

namespace agent {
namespace {

// The egress relay passes epoll bits, the preview relay poll bits: Linux gives them one value.
static_assert(POLLIN == EPOLLIN && POLLOUT == EPOLLOUT && POLLERR == EPOLLERR &&
              POLLHUP == EPOLLHUP);

constexpr std::uint32_t kIn = POLLIN;
constexpr std::uint32_t kOut = POLLOUT;

// Buffer fills per direction per wake-up: one busy connection cannot starve the others.
constexpr int kRoundsPerWakeup = 8;

bool wouldBlock(int error) noexcept { return error == EAGAIN || error == EWOULDBLOCK; }

}  // namespace

BytePump::BytePump(int first, int second, std::size_t buffer_bytes) noexcept
    : first_(first), second_(second), buffer_bytes_(buffer_bytes) {}

std::uint32_t BytePump::wantedEvents(Side side) const noexcept {
  const bool first = side == Side::kFirst;
  const Direction& reading = first ? first_to_second_ : second_to_first_;
  const Direction& writing = first ? second_to_first_ : first_to_second_;
  return (reading.wantsRead() ? kIn : 0) | (writing.hasPending() ? kOut : 0);
}

bool BytePump::onReady(Side side, std::uint32_t events) {
  if ((events & POLLERR) != 0) return false;  // a reset, or a failed send: nothing more can move
  const bool first = side == Side::kFirst;
  Direction& reading = first ? first_to_second_ : second_to_first_;
  Direction& writing = first ? second_to_first_ : first_to_second_;
  const int self = fd(side);
  const int other = fd(first ? Side::kSecond : Side::kFirst);
  const bool hang_up = (events & POLLHUP) != 0;
  const bool readable = (events & POLLIN) != 0 || hang_up;  // a hang-up reads as EOF
  const bool writable = (events & POLLOUT) != 0 || (hang_up && writing.hasPending());
  if ((readable && !pump(reading, self, other)) || (writable && !pump(writing, other, self))) {
    return false;
  }
  // A hang-up after EOF: the peer closed entirely and can take nothing more. Stop reading for
  // it, so the relay ends as soon as the other direction has.
  if (hang_up && reading.eof && !writing.hasPending() && !writing.ended) {
    writing.ended = true;
    writing.buffer.reset();
  }
  return !(first_to_second_.ended && second_to_first_.ended);
}

bool BytePump::pump(Direction& direction, int from, int to) {
  // A short read took all the source had: the next read would only say EAGAIN, a syscall that
  // costs microseconds under gVisor. A level-triggered loop reports anything that arrives later.
  bool source_drained = false;
  for (int round = 0; round < kRoundsPerWakeup; ++round) {
    if (direction.hasPending()) {
      const ssize_t n = ::send(to, direction.buffer.get() + direction.begin,
                               direction.end - direction.begin, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return wouldBlock(errno);
      }
      direction.begin += static_cast<std::size_t>(n);
      if (direction.hasPending()) return true;  // `to` is full: wait until it is writable
      direction.begin = direction.end = 0;
    }
    if (direction.ended || source_drained) return true;
    if (direction.eof) {
      ::shutdown(to, SHUT_WR);  // pass the half-close on; ENOTCONN (peer gone) changes nothing
      direction.ended = true;
      direction.buffer.reset();
      return true;
    }
    if (!direction.buffer) direction.buffer = std::make_unique_for_overwrite<char[]>(buffer_bytes_);
    const ssize_t n = ::recv(from, direction.buffer.get(), buffer_bytes_, 0);
    if (n > 0) {
      direction.end = static_cast<std::size_t>(n);
      source_drained = direction.end < buffer_bytes_;
    } else if (n == 0) {
      direction.eof = true;
    } else if (errno != EINTR) {
      return wouldBlock(errno);
    }
  }
  return true;
}

}  // namespace agent
