#include "common/base64.h"
#include "common/utf8.h"
#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {

Tool makeDownloadFileTool(const config::ServerConfig& config) {
  ToolSpec spec{
      "download_file",
      "Read a file from a sandbox",
      "Read a file from a session's sandbox. Text comes back as utf-8; binary data as base64 "
      "(or ask for an encoding explicitly).",
      {{"type", "object"},
       {"properties",
        {{"path", {{"type", "string"}, {"minLength", 1}, {"maxLength", 4096}}},
         {"session_id", sessionIdProperty("The session whose file to read.")},
         {"encoding",
          {{"type", "string"},
           {"enum", {"utf-8", "base64"}},
           {"description", "default: utf-8 when the file is valid UTF-8, else base64"}}}}},
       {"required", {"path", "session_id"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"path", {{"type", "string"}}},
         {"size", {{"type", "integer"}}},
         {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}}},
         {"content", {{"type", "string"}}},
         {"session_id", {{"type", "string"}}}}},
       {"required", {"path", "size", "encoding", "content", "session_id"}}},
      {{"readOnlyHint", true},
       {"destructiveHint", false},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  const auto max_bytes = static_cast<std::size_t>(config.execution.max_file_bytes);
  return Tool{
      std::move(spec), [max_bytes](const json& arguments, ToolContext& ctx) {
        auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"));
        server::SessionUse use(session);
        const auto path = arguments.at("path").get<std::string>();
        const std::string bytes = session->sandbox().readFile(path, max_bytes);
        std::string encoding = arguments.value("encoding", "");
        const bool is_text = common::isValidUtf8(bytes);
        if (encoding.empty()) encoding = is_text ? "utf-8" : "base64";
        if (encoding == "utf-8" && !is_text) {
          return ToolResult::failure(path +
                                     " is not valid UTF-8 text; request it with "
                                     "encoding \"base64\"");
        }
        ToolResult out;
        out.structured = {{"path", path},
                          {"size", bytes.size()},
                          {"encoding", encoding},
                          {"content", encoding == "utf-8" ? bytes : common::base64Encode(bytes)},
                          {"session_id", session->id()}};
        out.text = encoding == "utf-8" ? bytes
                                       : path + ": " + std::to_string(bytes.size()) +
                                             " bytes of binary data (base64 in structuredContent)";
        return out;
      }};
}

}  // namespace tools
