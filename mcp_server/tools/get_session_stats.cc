#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {

Tool makeGetSessionStatsTool() {
  ToolSpec spec{
      "get_session_stats",
      "Session statistics",
      "Statistics of a session: executions so far, creation time, uptime, container status, "
      "image and runtime, whether it started from the warm pool; for sessions with an "
      "mcp_allowlist, the enforced allowlist and the "
      "MCP sidecar's counters (requests allowed, denied, failed upstream).",
      {{"type", "object"},
       {"properties", {{"session_id", sessionIdProperty("The session to describe.")}}},
       {"required", {"session_id"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"session_id", {{"type", "string"}}},
         {"execution_count", {{"type", "integer"}}},
         {"created_at", {{"type", "number"}, {"description", "unix time, seconds"}}},
         {"uptime", {{"type", "number"}, {"description", "seconds"}}},
         {"idle_seconds", {{"type", "number"}}},
         {"container_status", {{"type", "string"}}},
         {"state",
          {{"type", "string"},
           {"enum", {"running", "frozen", "paused", "lost"}},
           {"description",
            "paused: idle, its state saved to disk and its container removed "
            "(sessions.pause_after_idle_s); the next call resumes it where it was"}}},
         {"snapshot_bytes",
          {{"type", "integer"}, {"description", "bytes the paused state holds on disk"}}},
         {"previews", previewsSchema()},
         {"snapshots",
          {{"type", "array"},
           {"description", "this session's named snapshots (snapshot_session)"},
           {"items",
            {{"type", "object"},
             {"properties",
              {{"snapshot", {{"type", "string"}}},
               {"bytes", {{"type", "integer"}}},
               {"created_at", {{"type", "number"}}}}}}}}},
         {"container_id", {{"type", "string"}}},
         {"image", {{"type", "string"}}},
         {"runtime", {{"type", "string"}}},
         {"warm_start",
          {{"type", "boolean"},
           {"description", "the sandbox came ready from the warm pool (no container start)"}}},
         {"mcp_allowlist", {{"type", "array"}, {"description", "as the session was created"}}},
         {"mcp",
          {{"type", "object"},
           {"description",
            "present when the session has a sidecar (mcp_allowlist or egress): {allowlist "
            "(enforced), sidecar: {mode, relay, running, restarts, allowed, denied, errors}, "
            "secret_hosts (host:port the relay sets the operator's secret headers for; never "
            "the values), egress (with egress): {allow, allowed, denied, errors, bytes_up, "
            "bytes_down}}"}}}}},
       {"required",
        {"session_id", "execution_count", "created_at", "uptime", "container_status", "image",
         "runtime"}}},
      {{"readOnlyHint", true},
       {"destructiveHint", false},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{
      std::move(spec), [](const json& arguments, ToolContext& ctx) {
        // Its counters only: a paused session stays paused.
        auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"),
                                         server::SessionRegistry::IfStarting::kWait,
                                         server::SessionRegistry::IfPaused::kLeave);
        auto& box = session->sandbox();
        ToolResult out;
        out.structured = {{"session_id", session->id()},
                          {"execution_count", session->executionCount()},
                          {"created_at", session->createdAtUnix()},
                          {"uptime", session->uptimeSeconds()},
                          {"idle_seconds", session->idleSeconds()},
                          {"container_status", box.status()},
                          {"state", session->state()},
                          {"snapshot_bytes", session->snapshotBytes()},
                          {"container_id", box.id()},
                          {"image", box.image()},
                          {"runtime", box.runtime()},
                          {"warm_start", session->warmStart()},
                          {"mcp_allowlist", session->options().mcp_allowlist}};
        json snapshots = json::array();
        if (auto* catalog = ctx.sessions.existingCatalog()) {
          for (const auto& s : catalog->ofSession(ctx.caller.owner, session->id())) {
            snapshots.push_back(
                {{"snapshot", s.name}, {"bytes", s.bytes}, {"created_at", s.created_at_unix}});
          }
        }
        out.structured["snapshots"] = snapshots;
        if (ctx.sessions.previews().enabled()) {
          out.structured["previews"] = previewsOf(ctx.sessions, *session);
        }
        if (auto* gateway = session->mcpGateway()) out.structured["mcp"] = gateway->stats();
        char text[256];
        std::snprintf(
            text, sizeof text, "session %s: %llu executions, up %.1f s, container %s, %s on %s",
            session->id().c_str(), static_cast<unsigned long long>(session->executionCount()),
            session->uptimeSeconds(), out.structured["container_status"].get<std::string>().c_str(),
            box.image().c_str(), box.runtime().c_str());
        out.text = text;
        if (out.structured.contains("mcp")) {
          const auto& relay = out.structured["mcp"]["sidecar"];
          out.text += "; MCP sidecar " +
                      std::string(relay["running"].get<bool>() ? "running" : "stopped") + ": " +
                      std::to_string(relay["allowed"].get<std::uint64_t>()) + " allowed, " +
                      std::to_string(relay["denied"].get<std::uint64_t>()) + " denied, " +
                      std::to_string(relay["errors"].get<std::uint64_t>()) + " failed upstream";
          if (const auto egress = out.structured["mcp"].find("egress");
              egress != out.structured["mcp"].end()) {
            out.text += "; egress to " + (*egress)["allow"].get<std::string>() + ": " +
                        std::to_string((*egress)["allowed"].get<std::uint64_t>()) + " allowed, " +
                        std::to_string((*egress)["denied"].get<std::uint64_t>()) + " denied";
          }
        }
        return out;
      }};
}

}  // namespace tools
