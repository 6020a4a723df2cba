// A tool is a small registered unit: a ToolSpec (what clients see in tools/list) plus a handler.
// Handlers run on worker threads and may block; they report failures as ToolResult::failure (the
// model sees isError: true and a message it can act on), never as JSON-RPC errors.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/cancel_token.h"
#include "config/config.h"
#include "server/caller.h"

namespace server {
class SessionRegistry;
}

namespace tools {

using json = nlohmann::json;

// Whether a tools/call may carry params.task (MCP 2025-11-25 tasks): tools/list shows it as
// execution.taskSupport.
enum class TaskSupport { kForbidden, kOptional };

struct ToolSpec {
  std::string name;
  std::string title;
  std::string description;
  json input_schema;
  json output_schema;
  json annotations = json::object();
  TaskSupport task_support = TaskSupport::kForbidden;
};

// The _meta key of a result's timing breakdown: server_ms (the tool call in the server), and for
// executions channel_ms (the agent round trip), agent_ms (the execution in the agent) and exec_ms
// (the code's own run time, Python).
inline constexpr std::string_view kTimingMetaKey = "sandbox-mcp/timing";

struct ToolResult {
  json structured = json::object();  // structuredContent; conforms to output_schema unless error
  std::string text;                  // short rendering for clients that ignore structured content
  // MCP content blocks sent after the text block (image, resource_link, ...), in order.
  json extra_content = json::array();
  // The result's _meta (e.g. "sandbox-mcp/timing"); sent when not empty, also with an error.
  json meta = json::object();
  bool is_error = false;

  [[nodiscard]] static ToolResult failure(std::string message) {
    ToolResult result;
    result.text = std::move(message);
    result.is_error = true;
    return result;
  }
};

// What a running tool may tell its client before the result: progress and log lines (an
// execution's output as it comes). The MCP layer implements it for each request; tools never
// build notifications themselves. Implementations are thread-safe: the sandbox channel's reader
// thread calls them.
class ClientUpdates {
 public:
  virtual ~ClientUpdates() = default;
  // The request carried a progressToken: progress() reaches the client.
  [[nodiscard]] virtual bool wantsProgress() const noexcept = 0;
  // The client set logging/setLevel to info or below: log() reaches the client.
  [[nodiscard]] virtual bool wantsLogs() const noexcept = 0;
  // `progress` must grow with every call; the total is unknown while the tool runs.
  virtual void progress(std::uint64_t progress, std::string message) = 0;
  // One log line at level info from `logger` (e.g. "stdout", "stderr").
  virtual void log(std::string_view logger, std::string_view text) = 0;
};

// Everything a handler may use; owned by the caller for the duration of the call.
class ToolMetrics;

struct ToolContext {
  const server::Caller& caller;  // whose sessions the call reaches, and whose limits it uses
  CancelToken& cancel;
  server::SessionRegistry& sessions;
  const config::ServerConfig& config;
  ClientUpdates& updates;
  const ToolMetrics* metrics = nullptr;  // callTool() records each call here; null: not counted
};

using ToolHandler = std::function<ToolResult(const json& arguments, ToolContext& ctx)>;

struct Tool {
  ToolSpec spec;
  ToolHandler handler;
};

}  // namespace tools
