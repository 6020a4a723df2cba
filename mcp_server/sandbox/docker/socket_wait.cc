#include "sandbox/docker/socket_wait.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace sandbox::docker {

bool waitReadable(int fd, SocketClock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SocketClock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

bool readExactly(int fd, char* out, std::size_t size, SocketClock::time_point deadline) {
  while (size > 0) {
    if (!waitReadable(fd, deadline)) return false;
    const ssize_t n = ::recv(fd, out, size, 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    out += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace sandbox::docker
