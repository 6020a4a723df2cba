// The agent's side of the socket channel (PROTOCOL.md, op "channel"): frames move to a host Unix
// socket bind-mounted into the sandbox, skipping the engine's attach stream (dockerd and
// containerd-shim: two processes and two copies per frame each way).
#pragma once

#include <string>

#include "common/unique_fd.h"

namespace agent {

// Connects to the Unix socket at `path` (close-on-exec, blocking) and sends `token` as the first
// frame ({"channel_token": ...}), which tells the server this connection is its agent's. Throws
// RequestError saying what failed (e.g. the runtime refuses host sockets: runsc needs
// --host-uds=open).
[[nodiscard]] common::UniqueFd connectChannel(const std::string& path, const std::string& token);

}  // namespace agent
