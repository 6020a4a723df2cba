// Opening a Unix-socket listener the way both of the sidecar's servers need it: a stale socket
// file left by a relay that died is replaced (a live listener or a non-socket is refused), and the
// socket is made connectable by any user (0666: the sandbox runs as another uid).
// Thread-safety: call from the controlling thread before the acceptor's io_context runs.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <string>

namespace sidecar {

// Throws std::runtime_error naming `flag` (e.g. "--listen") and saying what to fix.
void listenOnUnixSocket(boost::asio::local::stream_protocol::acceptor& acceptor,
                        const std::string& path, const std::string& flag,
                        boost::asio::io_context& ioc);

}  // namespace sidecar
