// The error for a request that is well-formed JSON but asks for something invalid; what() is the
// sentence sent back in the reply's "error". The protocol's own decoders throw the same type.
#pragma once

#include "protocol/agent_protocol.h"

namespace agent {

using RequestError = protocol::ProtocolError;

}  // namespace agent
