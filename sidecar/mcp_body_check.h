// For allowlist entries that restrict MCP methods or tools: reads the JSON-RPC body (single
// message or batch) and builds the JSON-RPC error the client gets when a call is refused.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "policy/policy.h"

namespace sidecar {

// JSON-RPC codes used in refusals: a method outside the list is "Method not found", a tool
// outside the list is "Invalid params" (what an MCP server answers for an unknown tool), and a
// body that is not JSON is a parse error.
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;  // duplicate object keys
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInvalidParams = -32602;

struct McpBodyCheck {
  policy::Decision decision;
  // When denied: 403 for a call the policy refuses, 400 for a body the sidecar will not read
  // (not JSON, nested deeper than common::kMaxJsonDepth, duplicate object keys, compressed).
  unsigned http_status = 403;
  // When denied: the JSON-RPC answer (an error object, or for a batch an array with one error
  // per request in it; nothing of a refused batch is forwarded).
  std::optional<nlohmann::json> error_response;
};

[[nodiscard]] bool ruleRestrictsMcp(const policy::Rule& rule) noexcept;

// An empty body carries no call (GET opens the SSE stream, DELETE ends a session) and passes.
// A body the sidecar cannot read is refused: the upstream must never see a call that was not
// checked. `content_encoding` must be empty or "identity" for the same reason. Bodies nested
// deeper than common::kMaxJsonDepth are refused before parsing, and so are objects with a
// duplicate key: parsers disagree on which value wins, so the upstream could act on another
// method or tool name than the one checked here.
[[nodiscard]] McpBodyCheck checkMcpBody(const policy::Rule& rule, std::string_view body,
                                        std::string_view content_encoding);

}  // namespace sidecar
