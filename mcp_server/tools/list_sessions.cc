#include "server/session_registry.h"
#include "tools/builtin_tools.h"

namespace tools {

Tool makeListSessionsTool() {
  ToolSpec spec{
      "list_sessions",
      "List your sessions",
      "List the sessions this client has created and not yet cleaned up.",
      {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"sessions",
          {{"type", "array"},
           {"items",
            {{"type", "object"},
             {"properties",
              {{"session_id", {{"type", "string"}}},
               {"image", {{"type", "string"}}},
               {"runtime", {{"type", "string"}}},
               {"created_at", {{"type", "number"}}},
               {"execution_count", {{"type", "integer"}}},
               {"idle_seconds", {{"type", "number"}}},
               {"state", {{"type", "string"}, {"enum", {"running", "frozen", "paused", "lost"}}}},
               {"snapshot_bytes", {{"type", "integer"}}},
               {"previews", previewsSchema()}}},
             {"required",
              {"session_id", "image", "runtime", "created_at", "execution_count"}}}}}}}},
       {"required", {"sessions"}}},
      {{"readOnlyHint", true},
       {"destructiveHint", false},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [](const json&, ToolContext& ctx) {
                json items = json::array();
                std::string text;
                for (const auto& s : ctx.sessions.list(ctx.caller.owner)) {
                  items.push_back({{"session_id", s->id()},
                                   {"image", s->sandbox().image()},
                                   {"runtime", s->sandbox().runtime()},
                                   {"created_at", s->createdAtUnix()},
                                   {"execution_count", s->executionCount()},
                                   {"idle_seconds", s->idleSeconds()},
                                   {"state", s->state()},
                                   {"snapshot_bytes", s->snapshotBytes()}});
                  if (ctx.sessions.previews().enabled()) {
                    items.back()["previews"] = previewsOf(ctx.sessions, *s);
                  }
                  text += s->id() + " (" + std::to_string(s->executionCount()) + " executions, " +
                          s->sandbox().image() + ", " + std::string(s->state()) + ")\n";
                }
                ToolResult out;
                out.structured = {{"sessions", items}};
                out.text = items.empty() ? "no sessions" : text;
                return out;
              }};
}

}  // namespace tools
