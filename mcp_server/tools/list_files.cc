#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {

Tool makeListFilesTool(const config::ServerConfig& config) {
  ToolSpec spec{
      "list_files",
      "List a directory in a sandbox",
      "List the entries of a directory in a session's sandbox (default: the working directory " +
          config.sandbox.workdir + ").",
      {{"type", "object"},
       {"properties",
        {{"path", {{"type", "string"}, {"default", "."}, {"maxLength", 4096}}},
         {"session_id", sessionIdProperty("The session whose files to list.")}}},
       {"required", {"session_id"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"path", {{"type", "string"}}},
         {"session_id", {{"type", "string"}}},
         {"entries",
          {{"type", "array"},
           {"items",
            {{"type", "object"},
             {"properties",
              {{"name", {{"type", "string"}}},
               {"type", {{"type", "string"}, {"enum", {"file", "dir", "symlink", "other"}}}},
               {"size", {{"type", "integer"}}},
               {"mtime", {{"type", "integer"}}}}},
             {"required", {"name", "type", "size", "mtime"}}}}}},
         {"truncated",
          {{"type", "boolean"}, {"description", "the directory had more entries than listed"}}}}},
       {"required", {"path", "session_id", "entries"}}},
      {{"readOnlyHint", true},
       {"destructiveHint", false},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"));
                server::SessionUse use(session);
                const auto path = arguments.value("path", ".");
                const auto listing = session->sandbox().listFiles(path);
                const auto& entries = listing.entries;
                json items = json::array();
                std::string text;
                for (const auto& e : entries) {
                  items.push_back({{"name", e.name},
                                   {"type", protocol::toString(e.type)},
                                   {"size", e.size},
                                   {"mtime", e.mtime}});
                  text += e.type == sandbox::FileType::kDir
                              ? e.name + "/\n"
                              : e.name + "  (" + std::to_string(e.size) + " bytes)\n";
                }
                ToolResult out;
                out.structured = {{"path", path},
                                  {"session_id", session->id()},
                                  {"entries", items},
                                  {"truncated", listing.truncated}};
                out.text = entries.empty() ? path + " is empty" : text;
                if (listing.truncated) {
                  out.text +=
                      "[only the first " + std::to_string(entries.size()) +
                      " entries are listed; list a subdirectory, or use run_shell with find]\n";
                }
                return out;
              }};
}

}  // namespace tools
