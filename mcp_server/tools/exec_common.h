// What run_code and run_shell share: their input/output schemas, option parsing and the
// execution itself. Stateless; thread-safe.
#pragma once

#include "sandbox/backend.h"
#include "tools/tool.h"

namespace server {
class Session;
}  // namespace server

namespace tools {

// Input schema with `code_field` ("code" or "command") plus the session options.
[[nodiscard]] json execInputSchema(const config::ServerConfig& config, const char* code_field,
                                   const char* code_description, bool with_language);
[[nodiscard]] json execOutputSchema();

// run_code and run_shell: code can delete or overwrite the session's files (rw volumes reach the
// host), reruns change state, and a session created with an mcp_allowlist reaches MCP servers
// outside the sandbox: a client cannot tell from a call which sessions can, so open world.
[[nodiscard]] inline json execAnnotations() {
  return {{"readOnlyHint", false},
          {"destructiveHint", true},
          {"idempotentHint", false},
          {"openWorldHint", true}};
}

// Acquires (or creates) the session, runs the request and renders the result.
[[nodiscard]] ToolResult runExecution(const json& arguments, ToolContext& ctx,
                                      sandbox::ExecKind kind, const std::string& code);

// The text block of an execution's result, from its structuredContent.
[[nodiscard]] std::string renderExecText(const json& structured);

// Links the saved output files of `result` into `out` (structuredContent.saved_output, appended,
// and resource_link blocks) and remembers them for resources/list.
void linkSavedOutputs(const sandbox::ExecResult& result, const std::string& execution_id,
                      server::Session& session, ToolResult& out);

}  // namespace tools
