// Session files as MCP resources: resources/templates/list offers sandbox://{session_id}/{path},
// resources/read returns a file (or a range of it) as text or blob, resources/list names what
// the caller's sessions produced (saved output, figures). Ownership is the tools': a client sees
// only its own sessions. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "server/session_registry.h"

namespace mcp {

// MCP's "Resource not found" error code.
inline constexpr int kResourceNotFound = -32002;

class SessionResources {
 public:
  SessionResources(server::SessionRegistry& sessions, const config::ServerConfig& config)
      : sessions_(sessions), config_(config) {}

  [[nodiscard]] nlohmann::json listTemplates() const;
  [[nodiscard]] nlohmann::json list(const std::string& owner) const;
  // Throws jsonrpc::Error: kInvalidParams for a malformed URI, kResourceNotFound for a session or
  // file the caller cannot read.
  [[nodiscard]] nlohmann::json read(const std::string& owner, const nlohmann::json& params) const;

 private:
  server::SessionRegistry& sessions_;
  const config::ServerConfig& config_;
};

// A MIME type from a file name's extension; text/plain or application/octet-stream when unknown
// (chosen by whether the bytes are UTF-8). Pure.
[[nodiscard]] std::string guessMimeType(const std::string& path, bool is_utf8);

}  // namespace mcp
