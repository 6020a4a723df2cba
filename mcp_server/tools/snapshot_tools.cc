// snapshot_session, fork_session and restore_session: a session's whole state (variables, files,
// processes) saved under a name, copied into new sessions, or brought back, so that a model
// explores branches without redoing work. The registry does the work (session_registry.h).
#include <regex>

#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {
namespace {

json snapshotNameProperty() {
  return {{"type", "string"},
          {"pattern", "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
          {"description",
           "The snapshot's name: 1-64 letters, digits, '.', '_', '-'. A client's names are its "
           "own; a second snapshot under a name replaces the first."}};
}

std::optional<std::string> checkName(const std::string& name) {
  static const std::regex kPattern("^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$");
  if (std::regex_match(name, kPattern)) return std::nullopt;
  return "snapshot name '" + name.substr(0, 80) +
         "' is not allowed: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
         "digit";
}

json describe(const server::NamedSnapshot& snapshot) {
  return {{"snapshot", snapshot.name},
          {"session_id", snapshot.session_id},
          {"bytes", snapshot.bytes},
          {"created_at", snapshot.created_at_unix}};
}

}  // namespace

Tool makeSnapshotSessionTool() {
  ToolSpec spec{
      "snapshot_session",
      "Snapshot a session",
      "Save a session's whole state under a name: Python and JavaScript variables, files in /tmp "
      "and the working directory, running processes. The session goes on. fork_session starts "
      "new sessions from the snapshot; restore_session brings the session back to it. A client "
      "holds a limited number of snapshots (a name reused replaces its snapshot); they go when "
      "the client disconnects.",
      {{"type", "object"},
       {"properties",
        {{"session_id", sessionIdProperty("The session to snapshot.")},
         {"name", snapshotNameProperty()}}},
       {"required", {"session_id", "name"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"snapshot", {{"type", "string"}}},
         {"session_id", {{"type", "string"}}},
         {"bytes", {{"type", "integer"}, {"description", "what the snapshot holds on disk"}}},
         {"created_at", {{"type", "number"}, {"description", "unix time, seconds"}}}}},
       {"required", {"snapshot", "session_id", "bytes", "created_at"}}},
      {{"readOnlyHint", false},
       {"destructiveHint", false},
       {"idempotentHint", false},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                const auto id = arguments.at("session_id").get<std::string>();
                const auto name = arguments.at("name").get<std::string>();
                if (auto problem = checkName(name)) return ToolResult::failure(*problem);
                const auto snapshot = ctx.sessions.snapshot(ctx.caller, id, name);
                ToolResult out;
                out.structured = describe(snapshot);
                out.text = "snapshot '" + name + "' of session " + id + " saved (" +
                           std::to_string(snapshot.bytes / 1000000) + " MB)";
                return out;
              }};
}

Tool makeForkSessionTool(const config::ServerConfig& config) {
  const auto max_count = config.sessions.max_forks_per_call;
  ToolSpec spec{
      "fork_session",
      "Fork a session",
      "Start new sessions that carry on from a session's current state (session_id) or from one "
      "of your snapshots (snapshot): each copy has the same variables, files and processes, the "
      "same image, limits and mcp_allowlist, and its own session_id; from then on they diverge. "
      "Use it to try alternatives without redoing the work. Each copy counts as a session.",
      {{"type", "object"},
       {"properties",
        {{"session_id", sessionIdProperty("The session to copy (its state now).")},
         {"snapshot", {{"type", "string"}, {"description", "A snapshot to copy (by name)."}}},
         {"count",
          {{"type", "integer"},
           {"minimum", 1},
           {"maximum", max_count},
           {"default", 1},
           {"description", "How many copies."}}}}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"sessions",
          {{"type", "array"},
           {"items",
            {{"type", "object"},
             {"properties", {{"session_id", {{"type", "string"}}}}},
             {"required", {"session_id"}}}}}},
         {"source", {{"type", "string"}}}}},
       {"required", {"sessions", "source"}}},
      {{"readOnlyHint", false},
       {"destructiveHint", false},
       {"idempotentHint", false},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [max_count](const json& arguments, ToolContext& ctx) {
                const auto from_session = arguments.value("session_id", std::string());
                const auto from_snapshot = arguments.value("snapshot", std::string());
                if (from_session.empty() == from_snapshot.empty()) {
                  return ToolResult::failure(
                      "fork_session needs exactly one of session_id (copy a session as it is "
                      "now) and snapshot (copy a snapshot_session snapshot)");
                }
                const auto count = arguments.value("count", std::int64_t{1});
                if (count < 1 || count > max_count) {
                  return ToolResult::failure("count must be 1 to " + std::to_string(max_count) +
                                             " (sessions.max_forks_per_call)");
                }
                const auto made = ctx.sessions.fork(ctx.caller, from_session, from_snapshot,
                                                    static_cast<std::size_t>(count));
                ToolResult out;
                json sessions = json::array();
                std::string text = "forked " + std::to_string(made.size()) + " session(s):";
                for (const auto& session : made) {
                  sessions.push_back({{"session_id", session->id()}});
                  text += " " + session->id();
                }
                const std::string source =
                    from_snapshot.empty() ? "session " + from_session : "snapshot " + from_snapshot;
                out.structured = {{"sessions", sessions}, {"source", source}};
                if (made.size() < static_cast<std::size_t>(count)) {
                  text += " (fewer than asked: the session limits, or a copy failed; see the log)";
                }
                out.text = text;
                return out;
              }};
}

Tool makeRestoreSessionTool() {
  ToolSpec spec{
      "restore_session",
      "Roll a session back",
      "Bring a session back to one of its snapshots (snapshot_session): its variables, files and "
      "processes become what they were then; what happened since is gone. The snapshot stays, "
      "so a session can go back to it again.",
      {{"type", "object"},
       {"properties",
        {{"session_id", sessionIdProperty("The session to roll back.")},
         {"snapshot", {{"type", "string"}, {"description", "One of this session's snapshots."}}}}},
       {"required", {"session_id", "snapshot"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"status", {{"type", "string"}, {"enum", {"success"}}}},
         {"session_id", {{"type", "string"}}},
         {"snapshot", {{"type", "string"}}}}},
       {"required", {"status", "session_id", "snapshot"}}},
      {{"readOnlyHint", false},
       {"destructiveHint", true},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{std::move(spec), [](const json& arguments, ToolContext& ctx) {
                const auto id = arguments.at("session_id").get<std::string>();
                const auto name = arguments.at("snapshot").get<std::string>();
                ctx.sessions.rollBack(ctx.caller, id, name);
                ToolResult out;
                out.structured = {{"status", "success"}, {"session_id", id}, {"snapshot", name}};
                out.text = "session " + id + " rolled back to snapshot '" + name + "'";
                return out;
              }};
}

}  // namespace tools
