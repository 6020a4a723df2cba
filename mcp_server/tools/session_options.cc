#include "tools/session_options.h"

#include "server/session_egress.h"
#include "server/volume_policy.h"

namespace tools {

json sessionIdProperty(const std::string& description) {
  return {{"type", "string"},
          {"maxLength", 128},
          {"description", description},
          // MCP 2026-07-28 clients send it as the Mcp-Param-Session-Id header as well: a front
          // routes the call to the replica holding the session without reading the body.
          {"x-mcp-header", kSessionIdHeader}};
}

json sessionOptionProperties() {
  return json{
      {"session_id",
       sessionIdProperty("Session to run in. Omit to start a new session: the result gives its "
                         "session_id. Pass that id to reuse its state (variables, files). An id "
                         "the server did not give you, or of a session that ended, is an error.")},
      {"image",
       {{"type", "string"},
        {"description",
         "Docker image for a new session: one the operator allowed "
         "(sandbox.allowed_images), already on the engine (nothing is pulled). Default: the "
         "server's sandbox image."}}},
      {"dockerfile",
       {{"type", "string"},
        {"maxLength", 65536},
        {"description",
         "Dockerfile to build the image of a new session (off unless the operator enabled "
         "sandbox.allow_dockerfile; cached by content; overrides image). Only FROM <allowed "
         "image on the engine>, RUN, ENV, WORKDIR, USER and LABEL; no ADD/COPY. RUN steps run "
         "under gVisor with no network and the sandbox's limits."}}},
      {"environment",
       {{"type", "object"},
        {"additionalProperties", {{"type", "string"}}},
        {"description", "Environment variables of a new session."}}},
      {"volumes",
       {{"type", "object"},
        {"additionalProperties",
         {{"type", "object"},
          {"properties",
           {{"bind", {{"type", "string"}}},
            {"mode", {{"type", "string"}, {"enum", {"ro", "rw"}}}}}},
          {"required", {"bind"}},
          {"additionalProperties", false}}},
        {"description",
         "Host directories to mount in a new session: {\"/host/dir\": {\"bind\": "
         "\"/mnt/data\", \"mode\": \"ro\"}}. Only directories the operator "
         "allowed; read-only unless rw is allowed there."}}},
      {"mcp_allowlist",
       {{"type", "array"},
        {"maxItems", 64},
        {"description",
         "MCP servers code in a new session may call (fixed at creation). Each item is a URL "
         "(\"https://tools.example.org/mcp\": that origin, under that path) or an object "
         "{\"url\": ..., \"methods\": [\"tools/list\", \"tools/call\"], \"tools\": "
         "[\"search\"]} limiting the JSON-RPC methods and tools. In the sandbox: "
         "`from sandbox_mcp import connect; c = connect(url); c.call_tool(name, args)`. "
         "Public hosts only: loopback, private and other special addresses (and localhost) "
         "only when the server's operator allows them, and then only as the operator's list "
         "narrows; cloud metadata and this server itself are never reachable."}}},
      {"egress",
       // anyOf rather than a type array (some clients warn on those); sessionEgress checks the
       // value whole, this schema is for the model to read.
       {{"anyOf",
         {{{"type", "boolean"}},
          {{"type", "object"},
           {"properties",
            {{"profiles", {{"type", "array"}, {"maxItems", 16}, {"items", {{"type", "string"}}}}},
             {"allow", {{"type", "array"}, {"maxItems", 64}}}}},
           {"additionalProperties", false}}}},
        {"description",
         "HTTP(S) from a new session to hosts the operator allows (off unless the operator "
         "enabled egress): true gives the operator's egress.allow list; {\"profiles\": "
         "[\"python-packages\"]} adds named lists (e.g. python-packages, npm-packages, "
         "git-hosting); {\"allow\": [\"pypi.org\"]} narrows to those hosts. pip, npm, git, curl "
         "and urllib use it as they are (HTTP_PROXY/HTTPS_PROXY are set); a refused request "
         "gets HTTP 403 with the reason, and the result's warnings list it."}}},
      {"freeze",
       {{"type", "boolean"},
        {"description",
         "false keeps a new session running while it is idle (fixed at creation). By default a "
         "session with no call whose processes are quiet is frozen after a few seconds "
         "(sessions.freeze_after_idle_s): it then costs no CPU and its next call thaws it in "
         "milliseconds, but a process that sleeps on a timer (a scheduler, a server waiting "
         "for its own clock) runs late meanwhile. Busy background processes keep it running."}}},
  };
}

ParsedSessionOptions parseSessionOptions(const json& arguments,
                                         const config::ServerConfig& config) {
  ParsedSessionOptions parsed;
  auto& options = parsed.options;
  for (const char* name :
       {"image", "dockerfile", "environment", "volumes", "mcp_allowlist", "egress", "freeze"}) {
    if (const auto it = arguments.find(name); it != arguments.end()) {
      options.arguments[name] = *it;
    }
  }
  if (const auto it = arguments.find("image"); it != arguments.end()) {
    options.image = it->get<std::string>();
    if (options.image == config.sandbox.image) options.image.clear();  // the default, spelled out
    parsed.given = true;
  }
  if (const auto it = arguments.find("dockerfile"); it != arguments.end()) {
    options.dockerfile = it->get<std::string>();
    parsed.given = true;
  }
  if (const auto it = arguments.find("environment"); it != arguments.end()) {
    options.environment = it->get<std::map<std::string, std::string>>();
    parsed.given = true;
    for (const auto& [name, value] : options.environment) {
      if (name.empty() || name.find('=') != std::string::npos ||
          name.find('\0') != std::string::npos || value.find('\0') != std::string::npos) {
        throw sandbox::SandboxError("environment: invalid variable name \"" + name + "\"");
      }
    }
  }
  if (const auto it = arguments.find("volumes"); it != arguments.end()) {
    options.volumes =
        server::resolveVolumes(*it, config.volumes.allowed_host_dirs, config.sandbox.workdir);
    parsed.given = true;
  }
  if (const auto it = arguments.find("mcp_allowlist"); it != arguments.end()) {
    options.mcp_allowlist = *it;
    parsed.given = true;
    if (!it->empty()) options.mcp_policy = server::effectivePolicy(*it, config.mcp.allowlist);
  }
  if (const auto it = arguments.find("egress"); it != arguments.end()) {
    parsed.given = true;
    options.egress_policy = server::sessionEgress(*it, config.egress);
  }
  if (const auto it = arguments.find("freeze"); it != arguments.end()) {
    parsed.given = true;
    if (!it->is_boolean()) throw sandbox::SandboxError("freeze: must be true or false");
    options.freeze = it->get<bool>();
  }
  return parsed;
}

}  // namespace tools
