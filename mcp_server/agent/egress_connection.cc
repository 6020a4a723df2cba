#include "agent/egress_connection.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace agent {
namespace {

// Buffer fills per direction per wake-up: one busy connection cannot starve the others.
constexpr int kRoundsPerWakeup = 8;
// How often a connect refused for a full backlog (EAGAIN) is tried again.
constexpr std::chrono::milliseconds kBacklogRetry{10};
constexpr std::size_t kDiscardBytes = std::size_t{16} * 1024;

constexpr std::uint32_t kIn = EPOLLIN;
constexpr std::uint32_t kOut = EPOLLOUT;

bool wouldBlock(int error) noexcept { return error == EAGAIN || error == EWOULDBLOCK; }

}  // namespace

std::optional<EgressUpstream> makeEgressUpstream(const std::string& path) {
  EgressUpstream upstream;
  if (path.empty() || path.size() >= sizeof upstream.address.sun_path) return std::nullopt;
  upstream.address.sun_family = AF_UNIX;
  std::memcpy(upstream.address.sun_path, path.c_str(), path.size() + 1);
  upstream.address_length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  upstream.path = path;
  return upstream;
}

std::string badGatewayAnswer(const std::string& socket_path, int error) {
  const std::string body =
      "sandbox-mcp: the sandbox's egress gateway is not reachable (connecting to " + socket_path +
      ": " + std::strerror(error) +
      "). Retry in a moment; if this persists, start a new session.\n";
  return "HTTP/1.1 502 Bad Gateway\r\n"
         "Content-Type: text/plain; charset=utf-8\r\n"
         "Content-Length: " +
         std::to_string(body.size()) +
         "\r\n"
         "Connection: close\r\n"
         "\r\n" +
         body;
}

EgressConnection::EgressConnection(UniqueFd client, const EgressUpstream& upstream,
                                   Clock::time_point now)
    : upstream_(upstream),
      client_(std::move(client)),
      give_up_at_(now + upstream.connect_patience) {
  connectUpstream(now);
}

int EgressConnection::fd(Side side) const noexcept {
  return side == Side::kClient ? client_.get() : upstream_fd_.get();
}

std::uint32_t EgressConnection::wantedEvents(Side side) const noexcept {
  const bool client = side == Side::kClient;
  switch (state_) {
    case State::kConnecting:
      return client ? 0 : kOut;
    case State::kRefusing:
      return !client ? 0 : refusal_.empty() ? kIn : kOut;
    case State::kRelaying: {
      const Direction& reading = client ? to_upstream_ : to_client_;
      const Direction& writing = client ? to_client_ : to_upstream_;
      return (reading.wantsRead() ? kIn : 0) | (writing.hasPending() ? kOut : 0);
    }
    case State::kWaitingForBacklog:
    case State::kFinished:
      return 0;
  }
  return 0;
}

// ---- connecting -----------------------------------------------------------------------------

void EgressConnection::connectUpstream(Clock::time_point now) {
  upstream_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!upstream_fd_) {
    refuse(errno, now);
    return;
  }
  if (::connect(upstream_fd_.get(), reinterpret_cast<const sockaddr*>(&upstream_.address),
                upstream_.address_length) == 0) {
    state_ = State::kRelaying;
    deadline_.reset();
    return;
  }
  const int error = errno;
  if (error == EINPROGRESS) {  // not Linux for Unix sockets, but a runtime may do it
    state_ = State::kConnecting;
    deadline_ = give_up_at_;
    return;
  }
  if (error == EAGAIN && now < give_up_at_) {  // the gateway's listen backlog is full
    upstream_fd_.reset();
    state_ = State::kWaitingForBacklog;
    deadline_ = std::min(now + kBacklogRetry, give_up_at_);
    return;
  }
  refuse(error, now);
}

void EgressConnection::finishConnect(Clock::time_point now) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(upstream_fd_.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error != 0) {
    refuse(error, now);
    return;
  }
  state_ = State::kRelaying;
  deadline_.reset();
}

// ---- refusing -------------------------------------------------------------------------------

void EgressConnection::refuse(int error, Clock::time_point now) {
  upstream_fd_.reset();
  refused_with_ = error;
  refusal_ = badGatewayAnswer(upstream_.path, error);
  state_ = State::kRefusing;
  deadline_ = now + upstream_.refusal_linger;
  continueRefusal();
}

// Writes the answer, shuts the sending half, then reads (and drops) what the client sent until
// it closes: closing with unread bytes would send a reset, which may destroy the answer before
// the client has read it.
void EgressConnection::continueRefusal() {
  while (!refusal_.empty()) {
    const ssize_t n = ::send(client_.get(), refusal_.data(), refusal_.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!wouldBlock(errno)) finish();
      return;
    }
    refusal_.erase(0, static_cast<std::size_t>(n));
    if (refusal_.empty()) ::shutdown(client_.get(), SHUT_WR);
  }
  char discard[kDiscardBytes];
  for (int round = 0; round < kRoundsPerWakeup; ++round) {
    const ssize_t n = ::recv(client_.get(), discard, sizeof discard, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || !wouldBlock(errno)) finish();
    return;
  }
}

// ---- relaying -------------------------------------------------------------------------------

void EgressConnection::onReady(Side side, std::uint32_t events, Clock::time_point now) {
  switch (state_) {
    case State::kConnecting:
      if (side == Side::kUpstream) finishConnect(now);
      return;
    case State::kRefusing:
      if (side == Side::kClient) continueRefusal();
      return;
    case State::kWaitingForBacklog:
    case State::kFinished:
      return;
    case State::kRelaying:
      break;
  }
  if ((events & EPOLLERR) != 0) {  // a reset, or a failed send: nothing more can move
    finish();
    return;
  }
  const bool client = side == Side::kClient;
  Direction& reading = client ? to_upstream_ : to_client_;
  Direction& writing = client ? to_client_ : to_upstream_;
  const int self = fd(side);
  const int other = fd(client ? Side::kUpstream : Side::kClient);
  const bool hang_up = (events & EPOLLHUP) != 0;
  const bool readable = (events & EPOLLIN) != 0 || hang_up;  // a hang-up reads as EOF
  const bool writable = (events & EPOLLOUT) != 0 || (hang_up && writing.hasPending());
  if ((readable && !pump(reading, self, other)) || (writable && !pump(writing, other, self))) {
    finish();
    return;
  }
  // A hang-up after EOF: the peer closed entirely and can take nothing more. Stop reading for
  // it, so the connection ends as soon as the other direction has.
  if (hang_up && reading.eof && !writing.hasPending() && !writing.ended) {
    writing.ended = true;
    writing.buffer.reset();
  }
  finishIfBothEnded();
}

bool EgressConnection::pump(Direction& direction, int from, int to) {
  // A short read took all the source had: the next read would only say EAGAIN, a syscall that
  // costs microseconds under gVisor. Level-triggered epoll reports anything that arrives later.
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
    if (!direction.buffer) {
      direction.buffer = std::make_unique_for_overwrite<char[]>(upstream_.buffer_bytes);
    }
    const ssize_t n = ::recv(from, direction.buffer.get(), upstream_.buffer_bytes, 0);
    if (n > 0) {
      direction.end = static_cast<std::size_t>(n);
      source_drained = direction.end < upstream_.buffer_bytes;
    } else if (n == 0) {
      direction.eof = true;
    } else if (errno != EINTR) {
      return wouldBlock(errno);
    }
  }
  return true;
}

void EgressConnection::onDeadline(Clock::time_point now) {
  switch (state_) {
    case State::kWaitingForBacklog:
      connectUpstream(now);
      return;
    case State::kConnecting:
      refuse(ETIMEDOUT, now);
      return;
    case State::kRefusing:
      finish();
      return;
    case State::kRelaying:
    case State::kFinished:
      deadline_.reset();
      return;
  }
}

void EgressConnection::finishIfBothEnded() noexcept {
  if (to_upstream_.ended && to_client_.ended) finish();
}

void EgressConnection::finish() noexcept {
  client_.reset();
  upstream_fd_.reset();
  to_upstream_.buffer.reset();
  to_client_.buffer.reset();
  refusal_.clear();
  deadline_.reset();
  state_ = State::kFinished;
}

}  // namespace agent
