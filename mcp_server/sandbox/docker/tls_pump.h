// The raw stream of an upgraded TLS connection (attach) as a plain socket: the caller gets one end
// of a socketpair; a thread of the pump's own relays bytes between the other end and the TLS
// stream, each direction in order and with back-pressure (it reads again only once the last
// chunk is written). When either side ends (the caller closes or shuts down its end; the engine
// closes the connection; an error), the pump closes both: the caller still reads every byte the
// engine sent before. Destroying the pump stops it and joins its thread; nothing outlives it.
#pragma once

#include <memory>
#include <utility>

#include "common/unique_fd.h"
#include "sandbox/docker/engine_client.h"

namespace sandbox::docker::detail {

class TlsConnection;

// A connected AF_UNIX stream socketpair (close-on-exec, blocking). Throws std::system_error.
[[nodiscard]] std::pair<common::UniqueFd, common::UniqueFd> socketPair();

// Takes the connection over (its io_context runs on the pump's thread from now on).
[[nodiscard]] std::unique_ptr<StreamPump> startTlsPump(std::unique_ptr<TlsConnection> connection,
                                                       common::UniqueFd pump_end);

}  // namespace sandbox::docker::detail
