// The tokens file (--tokens-file): bearer tokens, each naming a principal with quotas of its own.
// A principal's sessions and running executions count against its quotas across every MCP
// session it opens and its stateless (MCP 2026-07-28) requests; the quotas default to the
// per-client ones (sessions.max_sessions_per_client, execution.max_concurrent_per_client).
//
//   {"principals": [
//     {"name": "alice", "token": "<32+ characters>", "max_sessions": 4,
//      "max_concurrent_executions": 2},
//     {"name": "ci", "token": "<32+ characters>"}]}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace config {

struct Principal {
  std::string name;   // 1-64 of [A-Za-z0-9._-]; unique
  std::string token;  // at least kMinTokenChars printable ASCII, no spaces; unique
  std::optional<std::int64_t> max_sessions;
  std::optional<std::int64_t> max_concurrent_executions;
};

inline constexpr std::size_t kMinTokenChars = 32;

// Parses and validates; a ConfigError names the entry and field ("tokens file: principals[1].
// token: ..."). Never echoes a token.
[[nodiscard]] std::vector<Principal> principalsFromJson(const nlohmann::json& document);
// Reads `path`; warns (through spdlog) when the file is readable by group or others.
[[nodiscard]] std::vector<Principal> loadPrincipalsFile(const std::string& path);

}  // namespace config
