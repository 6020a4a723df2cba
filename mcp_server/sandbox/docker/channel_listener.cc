#include "sandbox/docker/channel_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/constant_time.h"
#include "common/frame.h"
#include "common/random_id.h"
#include "sandbox/backend.h"
#include "sandbox/docker/socket_wait.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

namespace fs = std::filesystem;
using Clock = SocketClock;

// The token frame is tiny; anything bigger is not our agent.
constexpr std::size_t kMaxTokenFrameBytes = 256;
// Connections accepted while waiting for the agent's: the agent's plus those sandbox code may
// open first (after a restore, code runs before the agent reconnects).
constexpr int kMaxAttempts = 8;
constexpr int kBacklog = 4;
constexpr std::chrono::seconds kTokenWait{1};

std::string systemError(const std::string& what) { return what + ": " + std::strerror(errno); }

// The first frame on the connection, read exactly (nothing after it); nullopt when it does not
// come before `deadline` or is not a small JSON frame.
std::optional<std::string> readTokenFrame(int fd, Clock::time_point deadline) {
  unsigned char header[frame::kHeaderBytes];
  if (!readExactly(fd, reinterpret_cast<char*>(header), sizeof header, deadline)) {
    return std::nullopt;
  }
  // A data frame's top bit makes the size exceed the cap as well.
  const std::uint32_t size = (std::uint32_t{header[0]} << 24U) | (std::uint32_t{header[1]} << 16U) |
                             (std::uint32_t{header[2]} << 8U) | std::uint32_t{header[3]};
  if (size > kMaxTokenFrameBytes) return std::nullopt;
  std::string payload(size, '\0');
  if (!readExactly(fd, payload.data(), size, deadline)) return std::nullopt;
  return payload;
}

}  // namespace

ChannelListener::ChannelListener(const std::string& root, const std::string& name)
    : dir_(root + "/" + name), socket_path_(dir_ + "/" + kSocketName) {
  if (socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    throw SandboxError("the agent channel socket path " + socket_path_ +
                       " is too long for a Unix "
                       "socket; set mcp.runtime_dir to a shorter directory");
  }
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || ::mkdir(dir_.c_str(), 0700) != 0) {
    throw SandboxError("cannot create " + dir_ + " for the agent channel: " +
                       (ec ? ec.message() : std::string(std::strerror(errno))));
  }
  // The sandbox sees the directory through a read-only bind mount; the agent connects as the
  // code user, so the socket must be connectable by anyone who can reach it, and only the
  // sandbox can (the runtime directory above is 0700).
  ::chmod(dir_.c_str(), 0755);
  try {
    listen();
  } catch (const SandboxError&) {
    fs::remove_all(dir_, ec);
    throw;
  }
}

void ChannelListener::listen() {
  token_ = common::randomHex(16);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_ ||
      ::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(socket_path_.c_str(), 0666) != 0 || ::listen(listener_.get(), kBacklog) != 0) {
    const std::string why = systemError("listening on " + socket_path_);
    stopListening();
    throw SandboxError("cannot open the agent channel: " + why);
  }
}

void ChannelListener::rearm() {
  stopListening();
  listen();
}

ChannelListener::~ChannelListener() {
  stopListening();
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) logger().warn("could not remove {}: {}", dir_, ec.message());
}

void ChannelListener::stopListening() noexcept {
  if (!listener_) return;
  listener_.reset();
  ::unlink(socket_path_.c_str());
}

common::UniqueFd ChannelListener::accept(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // After a restore or a snapshot, sandbox code runs while the agent connects and may connect
  // first: such connections are dropped (they cannot know the token) and the wait goes on, a
  // bounded number of times.
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (!listener_ || !waitReadable(listener_.get(), deadline)) break;
    common::UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection) continue;
    // A peer that connects and says nothing holds the wait for a second at most.
    const auto frame =
        readTokenFrame(connection.get(), std::min(deadline, Clock::now() + kTokenWait));
    const auto message = frame ? nlohmann::json::parse(*frame, nullptr, /*allow_exceptions=*/false)
                               : nlohmann::json();
    const auto token = message.is_object() ? message.find("channel_token") : message.end();
    if (!message.is_object() || token == message.end() || !token->is_string() ||
        !common::constantTimeEquals(token->get_ref<const std::string&>(), token_)) {
      logger().warn("{}: dropped a connection to the agent channel socket without its token", dir_);
      continue;
    }
    stopListening();  // one connection, ever: nothing in the sandbox can connect after it
    return connection;
  }
  stopListening();
  throw SandboxError("the agent did not connect to its channel socket with its token within " +
                     std::to_string(timeout.count()) + " ms");
}

}  // namespace sandbox::docker
