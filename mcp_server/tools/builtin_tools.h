// Factories for the built-in tools, one per .cc file, and the explicit list that registers them.
#pragma once

#include "config/config.h"
#include "tools/tool.h"
#include "tools/tool_registry.h"

namespace server {
class Session;
}

namespace tools {

[[nodiscard]] Tool makeRunCodeTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeRunShellTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeUploadFileTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeDownloadFileTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeListFilesTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeGetSessionStatsTool();
[[nodiscard]] Tool makeCleanupSessionTool();
[[nodiscard]] Tool makeListSessionsTool();
[[nodiscard]] Tool makeSnapshotSessionTool();
[[nodiscard]] Tool makeForkSessionTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeRestoreSessionTool();
// Registered only with preview.listen set.
[[nodiscard]] Tool makeExposePortTool(const config::ServerConfig& config);
[[nodiscard]] Tool makeUnexposePortTool();
// A session's exposed ports for get_session_stats and list_sessions: [{port, url, expires_at}].
[[nodiscard]] json previewsSchema();
[[nodiscard]] json previewsOf(server::SessionRegistry& sessions, const server::Session& session);

void registerBuiltinTools(ToolRegistry& registry, const config::ServerConfig& config);

}  // namespace tools
