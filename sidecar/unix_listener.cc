#include "sidecar/unix_listener.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sidecar {
namespace {

using Protocol = boost::asio::local::stream_protocol;

// A socket file left by a sidecar that died is removed; a live one or a non-socket is not.
void removeStaleSocket(const std::string& path, const std::string& flag,
                       boost::asio::io_context& ioc) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return;  // nothing there
  if (!S_ISSOCK(info.st_mode)) {
    throw std::runtime_error(flag + " " + path +
                             " exists and is not a socket; remove it or choose another path");
  }
  Protocol::socket probe(ioc);
  boost::system::error_code ec;
  probe.connect(Protocol::endpoint(path), ec);
  if (!ec) {
    throw std::runtime_error("another process is listening on " + path +
                             "; stop it or choose another " + flag + " path");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove the stale socket " + path + ": " +
                             std::strerror(errno));
  }
}

}  // namespace

void listenOnUnixSocket(Protocol::acceptor& acceptor, const std::string& path,
                        const std::string& flag, boost::asio::io_context& ioc) {
  removeStaleSocket(path, flag, ioc);
  boost::system::error_code ec;
  acceptor.open(Protocol(), ec);
  if (!ec) acceptor.bind(Protocol::endpoint(path), ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + path + " (" + flag + "): " + ec.message() +
                             "; check that the directory exists and is writable");
  }
  if (::chmod(path.c_str(), 0666) != 0) {
    throw std::runtime_error("cannot chmod 0666 " + path + ": " + std::strerror(errno));
  }
}

}  // namespace sidecar
