#include "sandbox/docker/port_door.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/constant_time.h"
#include "common/random_id.h"
#include "sandbox/backend.h"
#include "sandbox/docker/socket_wait.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

// The agent's connection plus those sandbox code may race in first (it can list the directory).
constexpr int kMaxAttempts = 16;
constexpr int kBacklog = 16;
// The agent wrote its token before it answered the open, so its bytes are there when it is
// accepted: a racer that says nothing costs this much at most.
constexpr std::chrono::milliseconds kTokenWait{100};

}  // namespace

PortDoor::PortDoor(const std::string& dir, const std::string& container_dir)
    : token_(common::randomHex(16)) {
  const std::string name = "port-" + common::randomHex(8) + ".sock";
  host_path_ = dir + "/" + name;
  container_path_ = container_dir + "/" + name;
  if (host_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    throw SandboxError("the port socket path " + host_path_ +
                       " is too long for a Unix socket; set mcp.runtime_dir to a shorter "
                       "directory");
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, host_path_.c_str(), host_path_.size() + 1);
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // 0666: the agent connects as the code user; only the sandbox can reach the directory.
  if (!listener_ ||
      ::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(host_path_.c_str(), 0666) != 0 || ::listen(listener_.get(), kBacklog) != 0) {
    const std::string why = std::strerror(errno);
    close();
    throw SandboxError("cannot open a socket for the sandbox's port at " + host_path_ + ": " + why);
  }
}

PortDoor::~PortDoor() { close(); }

void PortDoor::close() noexcept {
  if (!listener_) return;
  listener_.reset();
  ::unlink(host_path_.c_str());
}

common::UniqueFd PortDoor::accept(std::chrono::milliseconds timeout) {
  const auto deadline = SocketClock::now() + timeout;
  const std::string expected = token_ + "\n";
  for (int attempt = 0; attempt < kMaxAttempts && listener_; ++attempt) {
    if (!waitReadable(listener_.get(), deadline)) break;
    common::UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection) continue;
    std::string presented(expected.size(), '\0');
    if (readExactly(connection.get(), presented.data(), presented.size(),
                    std::min(deadline, SocketClock::now() + kTokenWait)) &&
        common::constantTimeEquals(presented, expected)) {
      close();
      return connection;
    }
    logger().warn("{}: dropped a connection without its token", host_path_);
  }
  close();
  throw SandboxError("the sandbox agent did not connect the port's stream within " +
                     std::to_string(timeout.count()) + " ms; retry");
}

}  // namespace sandbox::docker
