// Who a tool call acts for: whose sandboxes it reaches (the owner) and whose limits it counts
// against (the quota key and its limits). An owner is one MCP session (the stdio connection, an
// HTTP Mcp-Session-Id) or one principal's stateless endpoint ("principal:<name>", MCP
// 2026-07-28). A principal named in the tokens file is one quota however many MCP sessions it
// opens; anywhere else each owner is its own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace server {

// Whether the owner can come back to a server started again, and so its sessions are worth
// keeping (sessions.persist): the stdio client ("stdio") and a principal's stateless endpoint
// ("principal:<name>"). An HTTP Mcp-Session-Id ends with the server that issued it.
[[nodiscard]] inline bool ownerOutlivesServer(std::string_view owner) noexcept {
  return owner == "stdio" || owner.starts_with("principal:");
}

struct Caller {
  std::string owner;
  std::string quota_key;  // usually the owner; "principal:<name>" for a tokens-file principal
  std::size_t max_sessions = 0;               // sessions the quota key may hold at once
  std::size_t max_concurrent_executions = 0;  // executions it may run at once
};

}  // namespace server
