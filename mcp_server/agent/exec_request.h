// An exec request as the agent queues it: the protocol's request (protocol/agent_protocol.h, which
// also decodes it) and the id its reply must carry.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "protocol/agent_protocol.h"

namespace agent {

using protocol::ExecKind;
using protocol::ExecResult;
using protocol::ExecStatus;

struct ExecRequest : protocol::ExecRequest {
  std::int64_t id = 0;
};

// Throws protocol::ProtocolError (RequestError) naming the offending field.
[[nodiscard]] inline ExecRequest parseExecRequest(std::int64_t id, const nlohmann::json& message) {
  return ExecRequest{protocol::decodeExecRequest(message), id};
}

}  // namespace agent
