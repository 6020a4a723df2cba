#include "agent/egress_connection.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace agent {
namespace {

// Reads of a refused client's bytes per wake-up: one client cannot starve the others.
constexpr int kRoundsPerWakeup = 8;
// How often a connect refused for a full backlog (EAGAIN) is tried again.
constexpr std::chrono::milliseconds kBacklogRetry{10};
constexpr std::size_t kDiscardBytes = std::size_t{16} * 1024;

constexpr std::uint32_t kIn = EPOLLIN;
constexpr std::uint32_t kOut = EPOLLOUT;

bool wouldBlock(int error) noexcept { return error == EAGAIN || error == EWOULDBLOCK; }

BytePump::Side pumpSide(EgressConnection::Side side) noexcept {
  return side == EgressConnection::Side::kClient ? BytePump::Side::kFirst : BytePump::Side::kSecond;
}

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
    case State::kRelaying:
      return relay_->wantedEvents(pumpSide(side));
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
    startRelaying();
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
  startRelaying();
}

void EgressConnection::startRelaying() {
  relay_.emplace(client_.get(), upstream_fd_.get(), upstream_.buffer_bytes);
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
  if (!relay_->onReady(pumpSide(side), events)) finish();
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

void EgressConnection::finish() noexcept {
  client_.reset();
  upstream_fd_.reset();
  relay_.reset();
  refusal_.clear();
  deadline_.reset();
  state_ = State::kFinished;
}

}  // namespace agent
