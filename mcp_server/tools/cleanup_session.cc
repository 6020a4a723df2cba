#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {

Tool makeCleanupSessionTool() {
  ToolSpec spec{
      "cleanup_session",
      "End a session",
      "Destroy a session and its sandbox container. Its state and files are gone afterwards.",
      {{"type", "object"},
       {"properties",
        {{"session_id",
          sessionIdProperty("The session to end (its sandbox, variables and files go).")}}},
       {"required", {"session_id"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"status", {{"type", "string"}, {"enum", {"success"}}}},
         {"session_id", {{"type", "string"}}}}},
       {"required", {"status", "session_id"}}},
      // A second call finds nothing to end and changes nothing: idempotent.
      {{"readOnlyHint", false},
       {"destructiveHint", true},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                const auto id = arguments.at("session_id").get<std::string>();
                if (auto problem = server::SessionRegistry::checkSessionId(id)) {
                  return ToolResult::failure(*problem);
                }
                if (!ctx.sessions.remove(ctx.caller.owner, id)) {
                  return ToolResult::failure("Unknown session '" + id +
                                             "': nothing to clean up (it may have expired). "
                                             "list_sessions shows your sessions.");
                }
                ToolResult out;
                out.structured = {{"status", "success"}, {"session_id", id}};
                out.text = "session " + id + " cleaned up";
                return out;
              }};
}

}  // namespace tools
