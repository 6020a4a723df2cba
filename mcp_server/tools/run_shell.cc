#include "tools/builtin_tools.h"
#include "tools/exec_common.h"

namespace tools {

Tool makeRunShellTool(const config::ServerConfig& config) {
  ToolSpec spec{
      "run_shell",
      "Run a shell command in a sandbox",
      "Run a /bin/sh command in the same isolated sandbox as run_code (shared filesystem; "
      "/tmp and the working directory are writable). No network. Omit session_id to start a "
      "new session. Output past the cap is linked as for run_code. Long runs: raise `timeout`; "
      "it may run as an MCP task.",
      execInputSchema(config, "command", "Shell command line, run with /bin/sh -c.", false),
      execOutputSchema(),
      execAnnotations(),
      TaskSupport::kOptional};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                return runExecution(arguments, ctx, sandbox::ExecKind::kShell,
                                    arguments.at("command").get<std::string>());
              }};
}

}  // namespace tools
