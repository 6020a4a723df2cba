#include "agent/port_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace agent {
namespace {

static_assert(sizeof(sockaddr_un{}.sun_path) == protocol::kMaxUnixSocketPathBytes + 1,
              "the protocol's socket path limit must match sockaddr_un");

BytePump::Side pumpSide(PortConnection::Side side) noexcept {
  return side == PortConnection::Side::kSandbox ? BytePump::Side::kFirst : BytePump::Side::kSecond;
}

// The connect in progress on `fd` has completed: 0, or why it failed.
int connectResult(int fd) noexcept {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

}  // namespace

PortConnection::PortConnection(protocol::OpenPortRequest request, std::size_t buffer_bytes)
    : request_(std::move(request)), buffer_bytes_(buffer_bytes) {
  connectSandbox();
}

int PortConnection::fd(Side side) const noexcept {
  return side == Side::kSandbox ? sandbox_.get() : host_.get();
}

short PortConnection::wantedEvents(Side side) const noexcept {
  switch (state_) {
    case State::kConnecting:
      return side == connecting_ ? POLLOUT : 0;
    case State::kRelaying:
      return static_cast<short>(pump_->wantedEvents(pumpSide(side)));
    case State::kFailed:
    case State::kFinished:
      return 0;
  }
  return 0;
}

// ---- connecting -----------------------------------------------------------------------------

void PortConnection::connectSandbox() {
  connecting_ = Side::kSandbox;
  sandbox_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sandbox_) {
    failSandbox(errno);
    return;
  }
  const int one = 1;  // relayed requests are small: no Nagle delay on top of the browser's
  ::setsockopt(sandbox_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(request_.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sandbox_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    connectHost();
    return;
  }
  // EINTR: the connect goes on in the background, as EINPROGRESS says.
  if (errno != EINPROGRESS && errno != EINTR) failSandbox(errno);
}

void PortConnection::connectHost() {
  connecting_ = Side::kHost;
  host_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!host_) {
    failHost("could not connect to", errno);
    return;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, request_.path.c_str(), request_.path.size() + 1);
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + request_.path.size() + 1);
  if (::connect(host_.get(), reinterpret_cast<const sockaddr*>(&address), length) == 0) {
    sendToken();
    return;
  }
  // Linux completes a Unix connect at once or refuses it (EAGAIN: a full backlog); a runtime may
  // still say EINPROGRESS.
  if (errno != EINPROGRESS && errno != EINTR) failHost("could not connect to", errno);
}

void PortConnection::finishConnect() {
  const int fd = this->fd(connecting_);
  if (const int error = connectResult(fd); error != 0) {
    if (connecting_ == Side::kSandbox) {
      failSandbox(error);
    } else {
      failHost("could not connect to", error);
    }
    return;
  }
  if (connecting_ == Side::kSandbox) {
    connectHost();
  } else {
    sendToken();
  }
}

// The door takes the connection only with its token, which reached the agent over the channel,
// out of sandbox code's reach. A fresh socket's send buffer takes these 33 bytes whole.
void PortConnection::sendToken() {
  const std::string line = request_.token + "\n";
  ssize_t n = 0;
  do {
    n = ::send(host_.get(), line.data(), line.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    failHost("could not send the token to", errno);
    return;
  }
  if (static_cast<std::size_t>(n) != line.size()) {
    fail("the agent could send only " + std::to_string(n) + " of the token's " +
         std::to_string(line.size()) + " bytes to the server's preview socket " + request_.path +
         "; open the preview again");
    return;
  }
  pump_.emplace(sandbox_.get(), host_.get(), buffer_bytes_);
  state_ = State::kRelaying;
}

void PortConnection::onConnectTimeout(std::chrono::milliseconds waited) {
  if (state_ != State::kConnecting) return;
  const std::string port = std::to_string(request_.port);
  if (connecting_ == Side::kSandbox) {
    fail("the server on 127.0.0.1:" + port +
         " in the sandbox does not accept connections (none completed within " +
         protocol::formatSeconds(waited) +
         ": it may be stuck, or too busy to accept): check that it still serves, or restart it, "
         "and try again");
  } else {
    fail("the server's preview socket " + request_.path + " did not accept the connection within " +
         protocol::formatSeconds(waited) + "; open the preview again");
  }
}

// ---- failing --------------------------------------------------------------------------------

void PortConnection::failSandbox(int error) {
  const std::string port = std::to_string(request_.port);
  if (error == ECONNREFUSED) {
    fail("nothing listens on 127.0.0.1:" + port +
         " in the sandbox: start a server on that port (e.g. `python3 -m http.server " + port +
         " &`) and try again");
    return;
  }
  fail("connecting to 127.0.0.1:" + port + " in the sandbox failed (" + std::strerror(error) +
       "): check that a server listens on that port, and try again");
}

void PortConnection::failHost(const std::string& what, int error) {
  fail("the agent " + what + " the server's preview socket " + request_.path + " (" +
       std::strerror(error) + "); open the preview again");
}

void PortConnection::fail(std::string error) {
  finish();
  error_ = std::move(error);
  state_ = State::kFailed;
}

// ---- relaying -------------------------------------------------------------------------------

void PortConnection::onReady(Side side, short revents) {
  switch (state_) {
    case State::kConnecting:
      if (side == connecting_) finishConnect();
      return;
    case State::kRelaying:
      if (!pump_->onReady(pumpSide(side), static_cast<std::uint16_t>(revents))) finish();
      return;
    case State::kFailed:
    case State::kFinished:
      return;
  }
}

void PortConnection::finish() noexcept {
  pump_.reset();
  sandbox_.reset();
  host_.reset();
  state_ = State::kFinished;
}

}  // namespace agent
