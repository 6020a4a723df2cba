// Parses the session-creation arguments shared by run_code and run_shell. Thread-safe.
#pragma once

#include "server/session.h"
#include "tools/tool.h"

namespace tools {

struct ParsedSessionOptions {
  server::SessionOptions options;
  bool given = false;  // whether the call named any session option at all
};

// Throws sandbox::SandboxError naming the argument when an option is not allowed.
[[nodiscard]] ParsedSessionOptions parseSessionOptions(const json& arguments,
                                                       const config::ServerConfig& config);

// JSON Schema properties for those options, shared by both tools' inputSchema.
// What the session_id argument's header is named in MCP 2026-07-28 (x-mcp-header):
// Mcp-Param-Session-Id.
inline constexpr const char* kSessionIdHeader = "Session-Id";

// The session_id argument's schema, with `description`.
[[nodiscard]] json sessionIdProperty(const std::string& description);

[[nodiscard]] json sessionOptionProperties();

}  // namespace tools
