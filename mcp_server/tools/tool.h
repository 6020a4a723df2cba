// A tool is a small registered unit: a ToolSpec (what clients see in tools/list) plus a handler.
// Handlers run on worker threads and may block; they report failures as ToolResult::failure (the
// model sees isError: true and a message it can act on), never as JSON-RPC errors.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
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

// Whether a tool runs as a task (MCP 2025-11-25 tasks, and the 2026-07-28 tasks extension):
// tools/list shows it as execution.taskSupport. kRequired: its result comes only through a task,
// so a client that cannot take one is refused (2025: -32601 without params.task; 2026-07-28:
// -32021 without the extension).
enum class TaskSupport { kForbidden, kOptional, kRequired };

struct ToolSpec {
  std::string name;
  std::string title;
  std::string description;
  json input_schema;
  json output_schema;
  json annotations = json::object();
  TaskSupport task_support = TaskSupport::kForbidden;
  // Client capabilities a call needs (e.g. {"sampling": {}}): a 2026-07-28 request that does not
  // declare them all is refused with -32021 before the handler runs. Empty: none.
  json required_client_capabilities = json::object();
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
  // MCP 2026-07-28 input-required result (MRTR): when not empty, the call is answered with these
  // requests to the client (key -> {"method", "params"}) instead of content, and `request_state`
  // (any JSON, null: none) comes back sealed against tampering in the retry's ToolInputs::state.
  json input_requests = json::object();
  json request_state = nullptr;
  // The tool did not run to its end (an unexpected exception; callTool() sets it): a call answers
  // with the error result all the same, but a task of the tasks extension reports "failed" with
  // a JSON-RPC error, as the extension keeps "completed" + isError for the tool's own failures.
  bool internal_error = false;

  [[nodiscard]] static ToolResult inputRequired(json requests, json state = nullptr) {
    ToolResult result;
    result.input_requests = std::move(requests);
    result.request_state = std::move(state);
    return result;
  }

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
  // The same with a known total (e.g. 50 of 100); by default the total is left out.
  virtual void progressOf(std::uint64_t progress, std::uint64_t /*total*/, std::string message) {
    this->progress(progress, std::move(message));
  }
  // One log line at level info from `logger` (e.g. "stdout", "stderr").
  virtual void log(std::string_view logger, std::string_view text) = 0;
  // Asks the client (a 2025 session: sampling/createMessage, elicitation/create, roots/list) and
  // waits for its result. nullopt: it cannot be asked (it did not declare the capability, or the
  // request is a 2026-07-28 one, which asks through an input-required result instead). Throws
  // std::runtime_error when the client answers with an error, the call is cancelled or no answer
  // comes in time.
  [[nodiscard]] virtual std::optional<json> askClient(const std::string& /*method*/,
                                                      const json& /*params*/) {
    return std::nullopt;
  }
};

// What a 2026-07-28 request brings beside its arguments: the capabilities it declares, and on a
// retry after an input-required result, the client's answers and the tool's own state (verified:
// the MCP layer refuses a tampered one). Empty objects / null for a 2025 request.
struct ToolInputs {
  json client_capabilities = json::object();
  json responses = json::object();  // params.inputResponses
  json state = nullptr;             // the request_state the tool returned last round
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
  const ToolInputs* inputs = nullptr;    // null: none (a 2025 request, a task)
};

using ToolHandler = std::function<ToolResult(const json& arguments, ToolContext& ctx)>;

struct Tool {
  ToolSpec spec;
  ToolHandler handler;
};

}  // namespace tools
