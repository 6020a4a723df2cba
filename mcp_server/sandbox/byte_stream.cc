#include "sandbox/byte_stream.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <system_error>

namespace sandbox {

SocketStream::SocketStream(UniqueFd fd, std::chrono::milliseconds send_timeout)
    : fd_(std::move(fd)) {
  // Blocking I/O: the reader thread parks in recv(); shutdown() wakes it.
  const int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) != 0) ::fcntl(fd_.get(), F_SETFL, flags & ~O_NONBLOCK);
  if (send_timeout.count() > 0) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(send_timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((send_timeout.count() % 1000) * 1000);
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
}

std::size_t SocketStream::read(std::string& out) {
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n >= 0) {
      out.append(buffer, static_cast<std::size_t>(n));
      return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) continue;
    // After shutdown() some kernels report ECONNRESET/ENOTCONN rather than EOF; both mean "ended".
    if (errno == ECONNRESET || errno == ENOTCONN || errno == EPIPE) return 0;
    throw std::system_error(errno, std::generic_category(), "reading from the agent stream");
  }
}

void SocketStream::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        throw std::system_error(ETIMEDOUT, std::generic_category(),
                                "writing to the agent stream (the agent stopped reading)");
      }
      throw std::system_error(errno, std::generic_category(), "writing to the agent stream");
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void SocketStream::shutdown() noexcept { ::shutdown(fd_.get(), SHUT_RDWR); }

}  // namespace sandbox
