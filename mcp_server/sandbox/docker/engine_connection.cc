#include "sandbox/docker/engine_connection.h"

namespace sandbox::docker::detail {

UnixConnection::UnixConnection(const std::string& socket_path, std::chrono::milliseconds timeout) {
  stream_.expires_after(timeout);
  const auto ec = run([&](auto handler) {
    stream_.async_connect(net::local::stream_protocol::endpoint(socket_path), handler);
  });
  if (ec) {
    throw EngineError(0, "cannot connect to " + socket_path + ": " + ec.message(), "connect");
  }
}

UpgradedConnection UnixConnection::detachSelf(std::unique_ptr<EngineConnection> self) {
  stream_.expires_never();
  UpgradedConnection out;
  out.buffered = takeBuffered();
  out.fd.reset(stream_.release_socket().release());
  self.reset();  // this object is gone from here on
  return out;
}

}  // namespace sandbox::docker::detail
