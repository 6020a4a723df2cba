#include "agent/channel_socket.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "agent/request_error.h"
#include "common/fd_io.h"
#include "common/frame.h"
#include "common/json_codec.h"

namespace agent {

common::UniqueFd connectChannel(const std::string& path, const std::string& token) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    throw RequestError("channel: \"path\" must be a socket path of 1 to " +
                       std::to_string(sizeof address.sun_path - 1) + " bytes");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  common::UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) throw RequestError(std::string("channel: socket(): ") + std::strerror(errno));
  int status = 0;
  do {
    status = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } while (status != 0 && errno == EINTR);
  if (status != 0) {
    throw RequestError("channel: connect(" + path + "): " + std::strerror(errno) +
                       " (under gVisor the runtime needs --host-uds=open)");
  }
  const std::string hello = frame::encode(common::dumpJson({{"channel_token", token}}));
  if (!common::writeAll(socket.get(), hello)) {
    throw RequestError("channel: sending the token failed: " + std::string(std::strerror(errno)));
  }
  return socket;
}

}  // namespace agent
