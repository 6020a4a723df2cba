#include "tools/builtin_tools.h"
#include "tools/exec_common.h"

namespace tools {

Tool makeRunCodeTool(const config::ServerConfig& config) {
  ToolSpec spec{
      "run_code",
      "Run Python or JavaScript in a sandbox",
      "Run Python (default) or JavaScript (language \"javascript\", Node.js) in an isolated, "
      "network-less sandbox (gVisor). State persists within a session: variables, imports and "
      "functions survive between calls with the same session_id (each language keeps its own; "
      "both share the session's files). The value of a trailing expression is returned as "
      "`result`, like a notebook cell. Omit session_id to start a new session; its id is in the "
      "result. Figures (plt.show(), figures still open at the end, display(obj)) come back as "
      "images (downscaled; structuredContent.images[].uri reads the full size); a pandas "
      "DataFrame or Series value comes back as a compact table with its shape and dtypes. Output "
      "past the cap is saved in the sandbox and linked as "
      "sandbox://{session_id}/{path}: read it with resources/read or download_file. Long runs: "
      "raise `timeout`; it may run as an MCP task (tasks/get, tasks/result).",
      execInputSchema(config, "code", "Source code to execute.", true),
      execOutputSchema(),
      execAnnotations(),
      TaskSupport::kOptional};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                const auto kind = arguments.value("language", "python") == "javascript"
                                      ? sandbox::ExecKind::kJavascript
                                      : sandbox::ExecKind::kPython;
                return runExecution(arguments, ctx, kind, arguments.at("code").get<std::string>());
              }};
}

}  // namespace tools
