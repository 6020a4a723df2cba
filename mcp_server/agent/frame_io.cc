#include "agent/frame_io.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "common/json_codec.h"

namespace agent {

std::string dumpJson(const nlohmann::json& message) { return common::dumpJson(message); }

bool writeAll(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace agent
