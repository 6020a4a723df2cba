// MCP 2026-07-28 input-required results (MRTR) on the MCP layer's side, for tools/call and
// prompts/get: what a retry brings (the client's inputResponses and the sealed requestState,
// opened and checked), the client capabilities a request declares, and the result that asks for
// input. Pure functions over RequestStateSeal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "mcp/request_state.h"
#include "tools/tool.h"

namespace mcp {

// How long a client may take to answer an input request.
inline constexpr std::chrono::seconds kRequestStateTtl{600};

// The request's inputs: its declared client capabilities, inputResponses (each must be an
// object) and requestState (opened for `owner` and `purpose`). Throws jsonrpc::Error -32602 for a
// malformed inputResponses or a requestState that does not open (altered, expired, another's).
[[nodiscard]] tools::ToolInputs requestInputs(const nlohmann::json& params,
                                              const RequestStateSeal& seal,
                                              const std::string& owner, const std::string& purpose);

// params._meta's declared client capabilities; an empty object when none.
[[nodiscard]] nlohmann::json declaredCapabilities(const nlohmann::json& params);

// The client capabilities of `required` (an object, e.g. {"sampling": {}}) that `declared` lacks;
// an empty object when none.
[[nodiscard]] nlohmann::json missingCapabilities(const nlohmann::json& required,
                                                 const nlohmann::json& declared);

// The requests of `requests` (key -> {"method", "params"}) whose method the client declared a
// capability for (elicitation/create: elicitation, sampling/createMessage: sampling, roots/list:
// roots); `needed`, when set, gets the capabilities of the others (name -> {}).
[[nodiscard]] nlohmann::json declaredInputRequests(const nlohmann::json& requests,
                                                   const nlohmann::json& declared,
                                                   nlohmann::json* needed = nullptr);

// {"resultType": "input_required", "inputRequests", "requestState"} for `requests`, keeping only
// those whose method the client declared a capability for (elicitation/create: elicitation,
// sampling/createMessage: sampling, roots/list: roots); `state` (null: none) sealed. Throws
// jsonrpc::Error -32021 naming the capabilities when none of the requests is left.
[[nodiscard]] nlohmann::json inputRequiredResult(
    const nlohmann::json& requests, const nlohmann::json& state, const nlohmann::json& declared,
    const RequestStateSeal& seal, const std::string& owner, const std::string& purpose);

}  // namespace mcp
