// expose_port and unexpose_port: preview URLs for ports that sandbox code listens on
// (server/preview_table.h holds the grants, preview/ serves them).
#include <chrono>
#include <ctime>

#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"

namespace tools {
namespace {

json portProperty(const std::string& description) {
  return {{"type", "integer"}, {"minimum", 1}, {"maximum", 65535}, {"description", description}};
}

std::string isoTime(std::chrono::system_clock::time_point at) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(at);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

json previewsSchema() {
  return {{"type", "array"},
          {"description", "the session's preview URLs (expose_port)"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"port", {{"type", "integer"}}},
              {"url", {{"type", "string"}}},
              {"expires_at", {{"type", "string"}}}}},
            {"required", {"port", "url", "expires_at"}}}}};
}

json previewsOf(server::SessionRegistry& sessions, const server::Session& session) {
  json out = json::array();
  for (const auto& grant : sessions.previews().of(session)) {
    out.push_back({{"port", grant.port},
                   {"url", sessions.previews().urlOf(grant.label)},
                   {"expires_at", isoTime(grant.expires_at)}});
  }
  return out;
}

Tool makeExposePortTool(const config::ServerConfig& config) {
  const auto& preview = config.preview;
  ToolSpec spec{
      "expose_port",
      "Get a preview URL for a port",
      "Give a web server, dashboard or API running in the session a URL a person (or a browser "
      "tool) can open: e.g. start `python3 -m http.server 8000 &` with run_shell, then expose "
      "port 8000. The URL reaches 127.0.0.1:<port> inside the sandbox (the sandbox still has no "
      "network); HTTP, streamed responses and WebSockets work. Anyone holding the URL can open "
      "it until it expires, unexpose_port is called or the session ends. Exposing the same port "
      "again keeps its URL and sets the new expiry.",
      {{"type", "object"},
       {"properties",
        {{"session_id", sessionIdProperty("The session whose port to expose.")},
         {"port", portProperty("The TCP port sandbox code listens on (on 127.0.0.1 or 0.0.0.0).")},
         {"expires_s",
          {{"type", "integer"},
           {"minimum", 1},
           {"maximum", preview.max_expires_s},
           {"description", "Seconds the URL works (default " +
                               std::to_string(preview.default_expires_s) + ", at most " +
                               std::to_string(preview.max_expires_s) + ")."}}}}},
       {"required", {"session_id", "port"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"session_id", {{"type", "string"}}},
         {"port", {{"type", "integer"}}},
         {"url", {{"type", "string"}}},
         {"expires_at", {{"type", "string"}}},
         {"expires_in_s", {{"type", "integer"}}},
         {"login_url",
          {{"type", "string"},
           {"description",
            "with preview.require_login: a one-time link that lets a browser in"}}}}},
       {"required", {"session_id", "port", "url", "expires_at", "expires_in_s"}}},
      {{"readOnlyHint", false},
       {"destructiveHint", false},
       {"idempotentHint", true},
       {"openWorldHint", true}}};
  return Tool{
      std::move(spec), [&config, &preview](const json& arguments, ToolContext& ctx) {
        auto& previews = ctx.sessions.previews();
        if (!previews.enabled()) {
          return ToolResult::failure(
              "Previews are off on this server: the operator turns them on with "
              "preview.listen (e.g. \"127.0.0.1:8766\").");
        }
        const auto port = arguments.at("port").get<std::uint16_t>();
        if (config.egress.enabled && port == config.egress.proxy_port) {
          return ToolResult::failure(
              "Port " + std::to_string(port) +
              " is the sandbox's egress proxy (egress.proxy_port), not a server of the "
              "session's: it cannot be exposed. Expose the port your server listens on.");
        }
        const std::int64_t expires_s = arguments.value("expires_s", preview.default_expires_s);
        auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"),
                                         server::SessionRegistry::IfStarting::kWait,
                                         server::SessionRegistry::IfPaused::kLeave);
        const auto grant = previews.expose(session, port, std::chrono::seconds(expires_s),
                                           static_cast<std::size_t>(preview.max_ports_per_session));
        if (!grant) {
          return ToolResult::failure(
              "Session " + session->id() + " already exposes " +
              std::to_string(preview.max_ports_per_session) +
              " ports (preview.max_ports_per_session): end one with unexpose_port first.");
        }
        const auto url = previews.urlOf(grant->label);
        ToolResult out;
        out.structured = {{"session_id", session->id()},
                          {"port", port},
                          {"url", url},
                          {"expires_at", isoTime(grant->expires_at)},
                          {"expires_in_s", expires_s}};
        out.text = "Port " + std::to_string(port) + " of session " + session->id() + " is at " +
                   url + " until " + isoTime(grant->expires_at) + ".";
        if (preview.require_login) {
          const auto code = previews.mintLoginCode(grant->label);
          if (!code) return ToolResult::failure("The exposure ended meanwhile; retry.");
          // The URL ends with "/"; the login path starts with one.
          const std::string login_url = url.substr(0, url.size() - 1) +
                                        std::string(server::kPreviewLoginPath) + "?code=" + *code;
          out.structured["login_url"] = login_url;
          out.text += " Open " + login_url + " in the browser first: it works once, within " +
                      std::to_string(server::PreviewTable::kLoginCodeLife.count()) +
                      " s, and lets that browser in (the URL alone answers 401). "
                      "Call expose_port again for another login link.";
        } else {
          out.text += " Anyone with this URL can open it.";
        }
        out.text +=
            " unexpose_port ends it. If nothing listens on the port yet, the page "
            "says so until it does.";
        return out;
      }};
}

Tool makeUnexposePortTool() {
  ToolSpec spec{
      "unexpose_port",
      "End a port's preview URL",
      "End the preview URL expose_port gave for a port: it stops working at once, and connections "
      "open through it are closed within a second. The server in the sandbox keeps running.",
      {{"type", "object"},
       {"properties",
        {{"session_id", sessionIdProperty("The session whose port to stop exposing.")},
         {"port", portProperty("The port expose_port exposed.")}}},
       {"required", {"session_id", "port"}},
       {"additionalProperties", false}},
      {{"type", "object"},
       {"properties",
        {{"status", {{"type", "string"}, {"enum", {"success"}}}},
         {"session_id", {{"type", "string"}}},
         {"port", {{"type", "integer"}}}}},
       {"required", {"status", "session_id", "port"}}},
      {{"readOnlyHint", false},
       {"destructiveHint", true},
       {"idempotentHint", true},
       {"openWorldHint", false}}};
  return Tool{
      std::move(spec), [](const json& arguments, ToolContext& ctx) {
        const auto port = arguments.at("port").get<std::uint16_t>();
        auto session = ctx.sessions.find(ctx.caller.owner, arguments.at("session_id"),
                                         server::SessionRegistry::IfStarting::kWait,
                                         server::SessionRegistry::IfPaused::kLeave);
        if (!ctx.sessions.previews().unexpose(*session, port)) {
          return ToolResult::failure("Port " + std::to_string(port) + " of session " +
                                     session->id() +
                                     " is not exposed (or its URL expired): nothing to "
                                     "end. get_session_stats lists what it exposes.");
        }
        ToolResult out;
        out.structured = {{"status", "success"}, {"session_id", session->id()}, {"port", port}};
        out.text = "port " + std::to_string(port) + " of session " + session->id() +
                   " is no longer exposed";
        return out;
      }};
}

}  // namespace tools
