// The byte relay of an egress CONNECT tunnel: once the proxy has allowed the target and checked
// the first TLS record, it hands both connections here. Each direction reads into its own buffer
// and writes all of it before reading again, so a slow reader slows its writer (no unbounded
// queue). A side that closes its sending half is passed on (shutdown(send)); the tunnel ends
// when both directions have ended, on an error, when no byte moved for `idle`, or once
// `max_bytes` moved in all. `done` runs once, on the io_context's thread, with the counts and
// why it ended. Thread-safety: everything runs on the sockets' io_context (one thread).
#pragma once

#include <boost/asio/generic/stream_protocol.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sidecar {

struct TunnelLimits {
  std::chrono::milliseconds idle{60000};
  std::uint64_t max_bytes = std::uint64_t{1} << 40;
};

struct TunnelResult {
  std::uint64_t up = 0;    // sandbox to upstream, `first_up` included
  std::uint64_t down = 0;  // upstream to sandbox
  std::string end;         // "closed", "idle", "limit", or the error's message
};

using TunnelSocket = boost::asio::generic::stream_protocol::socket;

// Starts relaying between `sandbox` and `upstream`. `first_up` (bytes the proxy already read from
// the sandbox, e.g. the ClientHello) goes upstream first.
void startTunnel(TunnelSocket sandbox, TunnelSocket upstream, std::string first_up,
                 TunnelLimits limits, std::function<void(const TunnelResult&)> done);

}  // namespace sidecar
