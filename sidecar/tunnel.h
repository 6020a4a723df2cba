// The byte relay of an egress CONNECT tunnel: once the proxy has allowed the target and checked
// the first TLS record, it hands both connections here. Each direction reads into its own buffer
// and writes all of it before reading again, so a slow reader slows its writer (no unbounded
// queue). A side that closes its sending half is passed on (shutdown(send)); the tunnel ends
// when both directions have ended, on an error, when no byte moved for `idle`, after
// `max_duration`, once `max_bytes` moved in all, or once a `budget` shared by several tunnels is
// spent (reads never ask for more than it has left). `max_up` stops reading from the sandbox after
// that many bytes went up (a plain-HTTP request's head and body: what the sandbox sends after them
// is not relayed). `done` runs once, on the io_context's thread, with the counts and why it ended.
// Thread-safety: everything runs on the sockets' io_context (one thread).
#pragma once

#include <boost/asio/generic/stream_protocol.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sidecar {

// Bytes several tunnels may still move together; used on their io_context's thread only.
struct TunnelBudget {
  std::uint64_t left = 0;
};

struct TunnelLimits {
  std::chrono::milliseconds idle{60000};
  std::chrono::milliseconds max_duration{std::chrono::hours(24)};
  std::uint64_t max_bytes = std::uint64_t{1} << 40;
  std::uint64_t max_up = std::uint64_t{1} << 62;  // `first_up` included
  std::shared_ptr<TunnelBudget> budget;           // none: only max_bytes bounds the tunnel
};

struct TunnelResult {
  std::uint64_t up = 0;    // sandbox to upstream, `first_up` included
  std::uint64_t down = 0;  // upstream to sandbox
  std::string end;         // "closed", "idle", "time", "limit", or the error's message
};

using TunnelSocket = boost::asio::generic::stream_protocol::socket;

// Starts relaying between `sandbox` and `upstream`. `first_up` (bytes the proxy already read from
// the sandbox, e.g. the ClientHello) goes upstream first.
void startTunnel(TunnelSocket sandbox, TunnelSocket upstream, std::string first_up,
                 TunnelLimits limits, std::function<void(const TunnelResult&)> done);

}  // namespace sidecar
