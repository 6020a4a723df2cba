#include "sandbox/sidecar.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/unique_fd.h"

namespace sandbox {

bool socketAccepts(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  const common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return false;
  // A listening Unix socket accepts (or queues) the connection at once; EAGAIN means its
  // backlog is full, which still proves a live listener.
  const int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  return rc == 0 || errno == EAGAIN;
}

bool waitForSocket(const std::string& path, std::int64_t timeout_ms,
                   const std::function<bool()>& still_starting) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (socketAccepts(path)) return true;
    if (!still_starting() || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace sandbox
