#include <optional>
#include <string_view>

#include "common/base64.h"
#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {

Tool makeUploadFileTool(const config::ServerConfig& config) {
  ToolSpec spec{
      "upload_file",
      "Upload a file into a sandbox",
      "Write a file into an existing session's sandbox (parent directories are created). "
      "Relative paths are under the working directory. Use encoding base64 for binary data.",
      {{"type", "object"},
       {"properties",
        {{"path", {{"type", "string"}, {"minLength", 1}, {"maxLength", 4096}}},
         {"content", {{"type", "string"}}},
         {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}, {"default", "utf-8"}}},
         {"session_id",
          sessionIdProperty(
              "The session to write into (an id a run_code or run_shell result gave).")}}},
       {"required", {"path", "content", "session_id"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"status", {{"type", "string"}}},
         {"path", {{"type", "string"}}},
         {"size", {{"type", "integer"}}},
         {"session_id", {{"type", "string"}}}}},
       {"required", {"status", "path", "size", "session_id"}}},
      // Overwrites an existing file; the same upload twice leaves the same file.
      {{"readOnlyHint", false},
       {"destructiveHint", true},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  const auto max_bytes = static_cast<std::size_t>(config.execution.max_file_bytes);
  return Tool{std::move(spec), [max_bytes](const json& arguments, ToolContext& ctx) {
                const auto& content = arguments.at("content").get_ref<const std::string&>();
                std::optional<std::string> decoded;  // only for base64: text is used as it is
                if (arguments.value("encoding", "utf-8") == "base64") {
                  decoded = common::base64Decode(content);
                  if (!decoded) {
                    return ToolResult::failure(
                        "content is not valid base64; send standard base64 (A-Z a-z 0-9 + /, "
                        "'=' padding) or use encoding \"utf-8\" for text");
                  }
                }
                const std::string_view bytes = decoded ? std::string_view(*decoded) : content;
                if (bytes.size() > max_bytes) {
                  return ToolResult::failure(
                      "file of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                      std::to_string(max_bytes) + " bytes (execution.max_file_bytes)");
                }
                auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"));
                server::SessionUse use(session);
                const auto written =
                    session->sandbox().writeFile(arguments.at("path").get<std::string>(), bytes);
                ToolResult out;
                out.structured = {{"status", "success"},
                                  {"path", arguments.at("path")},
                                  {"size", written},
                                  {"session_id", session->id()}};
                out.text = "wrote " + std::to_string(written) + " bytes to " +
                           arguments.at("path").get<std::string>();
                return out;
              }};
}

}  // namespace tools
