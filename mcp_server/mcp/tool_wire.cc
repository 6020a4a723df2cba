#include "mcp/tool_wire.h"

namespace mcp {

using nlohmann::json;

json toCallResult(tools::ToolResult result) {
  // Moved, not copied: a result may hold a whole file. No empty text block before other content.
  json content = json::array();
  if (!result.text.empty() || result.extra_content.empty()) {
    content.push_back({{"type", "text"}, {"text", std::move(result.text)}});
  }
  for (auto& block : result.extra_content) content.push_back(std::move(block));
  // resultType: required by 2026-07-28 on every result; a 2025 client ignores it.
  json out{
      {"content", std::move(content)}, {"isError", result.is_error}, {"resultType", "complete"}};
  if (!result.is_error) out["structuredContent"] = std::move(result.structured);
  if (!result.meta.empty()) out["_meta"] = std::move(result.meta);
  return out;
}

void RequestUpdates::progress(std::uint64_t progress, std::string message) {
  sendProgress(progress, std::nullopt, std::move(message));
}

void RequestUpdates::progressOf(std::uint64_t progress, std::uint64_t total, std::string message) {
  sendProgress(progress, total, std::move(message));
}

void RequestUpdates::sendProgress(std::uint64_t progress, std::optional<std::uint64_t> total,
                                  std::string message) {
  if (!wantsProgress()) return;
  json params{
      {"progressToken", progress_token_}, {"progress", progress}, {"message", std::move(message)}};
  if (total) params["total"] = *total;
  notify_(json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", params}});
}

void RequestUpdates::log(std::string_view logger, std::string_view text) {
  if (!wantsLogs()) return;
  notify_(json{{"jsonrpc", "2.0"},
               {"method", "notifications/message"},
               {"params", {{"level", "info"}, {"logger", logger}, {"data", text}}}});
}

}  // namespace mcp
