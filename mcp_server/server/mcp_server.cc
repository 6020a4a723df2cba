#include "server/mcp_server.h"

#include <spdlog/spdlog.h>

#include <array>

#include "jsonrpc/errors.h"

namespace server {
namespace {

using jsonrpc::json;

constexpr std::array<const char*, 3> kSupportedVersions{"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr std::array<const char*, 8> kLogLevels{"debug", "info",     "notice", "warning",
                                                "error", "critical", "alert",  "emergency"};

int logLevelIndex(const std::string& level) {
  for (std::size_t i = 0; i < kLogLevels.size(); ++i) {
    if (level == kLogLevels[i]) return static_cast<int>(i);
  }
  return -1;
}

const char* kInstructions =
    "Runs code in isolated, network-less sandboxes (Docker + gVisor). run_code executes Python "
    "and keeps state per session (variables persist; a trailing expression's value is returned "
    "as result). run_shell runs /bin/sh commands in the same sandbox. upload_file, "
    "download_file and list_files move files in and out. Omit session_id on the first call and "
    "reuse the returned session_id afterwards; cleanup_session ends it. Sandboxes have no "
    "network access and cannot install packages from the internet.";

}  // namespace

bool isSupportedProtocolVersion(const std::string& version) {
  for (const char* v : kSupportedVersions) {
    if (version == v) return true;
  }
  return false;
}

std::shared_ptr<jsonrpc::Endpoint> McpServer::open(const std::string& owner) {
  return std::make_shared<McpEndpoint>(owner, config_, sessions_, tools_);
}

McpEndpoint::McpEndpoint(std::string owner, const config::ServerConfig& config,
                         SessionManager& sessions, const tools::ToolRegistry& tools)
    : owner_(std::move(owner)),
      config_(config),
      sessions_(sessions),
      tools_(tools),
      resources_(sessions, config) {
  dispatcher_.onRequest("initialize",
                        [this](const json& params, auto&) { return initialize(params); });
  dispatcher_.onRequest("ping", [](const json&, auto&) { return json::object(); });
  dispatcher_.onRequest("tools/list", [this](const json&, auto&) {
    requireInitialized();
    return tools_.list();
  });
  dispatcher_.onRequest("tools/call", [this](const json& params, jsonrpc::CallContext& call) {
    return callTool(params, call);
  });
  dispatcher_.onRequest("resources/templates/list", [this](const json&, auto&) {
    requireInitialized();
    return resources_.listTemplates();
  });
  dispatcher_.onRequest("resources/list", [this](const json&, auto&) {
    requireInitialized();
    return resources_.list(owner_);
  });
  dispatcher_.onRequest("resources/read", [this](const json& params, auto&) {
    requireInitialized();
    return resources_.read(owner_, params);
  });
  dispatcher_.onRequest("logging/setLevel",
                        [this](const json& params, auto&) { return setLogLevel(params); });
  dispatcher_.onNotification("notifications/initialized", [](const json&, auto&) {});
  dispatcher_.onNotification("notifications/cancelled",
                             [this](const json& params, auto&) { cancelled(params); });
}

std::optional<json> McpEndpoint::handle(const json& message, jsonrpc::RequestContext& ctx) {
  return dispatcher_.handle(message, ctx);
}

std::string McpEndpoint::orderingKey(const json& message) const {
  if (!message.is_object() || message.value("method", json()) != "tools/call") return {};
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return {};
  const auto arguments = params->find("arguments");
  if (arguments == params->end() || !arguments->is_object()) return {};
  const auto session = arguments->find("session_id");
  if (session == arguments->end() || !session->is_string() || session->empty()) return {};
  return "session\n" + session->get<std::string>();
}

std::string McpEndpoint::protocolVersion() const {
  std::lock_guard lock(mutex_);
  return protocol_version_;
}

json McpEndpoint::initialize(const json& params) {
  const auto requested = params.find("protocolVersion");
  if (requested == params.end() || !requested->is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "initialize needs params.protocolVersion (e.g. \"2025-11-25\")");
  }
  const std::string version = isSupportedProtocolVersion(requested->get<std::string>())
                                  ? requested->get<std::string>()
                                  : kLatestProtocolVersion;
  {
    std::lock_guard lock(mutex_);
    protocol_version_ = version;
  }
  const auto client = params.value("clientInfo", json::object());
  spdlog::info("client {} {} initialized (protocol {})", client.value("name", "?"),
               client.value("version", "?"), version);
  return json{
      {"protocolVersion", version},
      {"capabilities",
       {{"tools", {{"listChanged", false}}},
        {"resources", {{"subscribe", false}, {"listChanged", false}}},
        {"logging", json::object()}}},
      {"serverInfo", {{"name", "sandbox-mcp"}, {"title", "Sandbox MCP"}, {"version", "0.1.0"}}},
      {"instructions", kInstructions}};
}

void McpEndpoint::requireInitialized() const {
  std::lock_guard lock(mutex_);
  if (protocol_version_.empty()) {
    throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                         "Server not initialized: send an initialize request first");
  }
}

json McpEndpoint::callTool(const json& params, jsonrpc::CallContext& call) {
  requireInitialized();
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "tools/call needs params.name (a string)");
  }
  static const json kNoArguments = json::object();
  const auto given = params.find("arguments");  // referenced, not copied: it may hold a file
  const json& arguments = given != params.end() ? *given : kNoArguments;
  if (!arguments.is_object()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "tools/call params.arguments must be an object");
  }
  const std::string id_key = call.id.dump();
  auto token = std::make_shared<CancelToken>();
  {
    std::lock_guard lock(mutex_);
    if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
    in_flight_[id_key] = token;
  }
  struct Forget {
    McpEndpoint* self;
    const std::string& key;
    ~Forget() {
      std::lock_guard lock(self->mutex_);
      self->in_flight_.erase(key);
    }
  } forget{this, id_key};

  json progress_token = nullptr;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    progress_token = meta->value("progressToken", json(nullptr));
  }
  tools::ToolContext ctx{owner_, *token, sessions_, config_, call.transport.notify, progress_token};
  {
    std::lock_guard lock(mutex_);
    ctx.client_logs_output = client_log_level_ >= 0 && client_log_level_ <= logLevelIndex("info");
  }
  const auto started = std::chrono::steady_clock::now();
  json result = tools_.call(name->get<std::string>(), arguments, ctx);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::debug("tools/call {} finished in {:.1f} ms (isError={})", name->get<std::string>(), ms,
                result.value("isError", false));
  if (result.value("isError", false)) {
    clientLog(
        call.transport, "warning",
        name->get<std::string>() + " failed: " + result["content"][0]["text"].get<std::string>());
  }
  return result;
}

json McpEndpoint::setLogLevel(const json& params) {
  const std::string level = params.value("level", "");
  const int index = logLevelIndex(level);
  if (index < 0) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "logging/setLevel: level must be one of debug, info, notice, warning, "
                         "error, critical, alert, emergency");
  }
  std::lock_guard lock(mutex_);
  client_log_level_ = index;
  return json::object();
}

void McpEndpoint::clientLog(jsonrpc::RequestContext& ctx, const std::string& level,
                            const std::string& text) {
  {
    std::lock_guard lock(mutex_);
    if (client_log_level_ < 0 || logLevelIndex(level) < client_log_level_) return;
  }
  if (!ctx.notify) return;
  ctx.notify(json{{"jsonrpc", "2.0"},
                  {"method", "notifications/message"},
                  {"params", {{"level", level}, {"logger", "sandbox-mcp"}, {"data", text}}}});
}

void McpEndpoint::cancelled(const json& params) {
  const auto id = params.find("requestId");
  if (id == params.end()) return;
  std::shared_ptr<CancelToken> token;
  {
    std::lock_guard lock(mutex_);
    const auto it = in_flight_.find(id->dump());
    if (it == in_flight_.end()) return;  // finished already, or never existed: nothing to do
    token = it->second;
  }
  spdlog::info("request {} cancelled by the client ({})", id->dump(),
               params.value("reason", "no reason given"));
  token->cancel();
}

void McpEndpoint::close() {
  std::unordered_map<std::string, std::shared_ptr<CancelToken>> running;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    running = in_flight_;
  }
  for (auto& [key, token] : running) token->cancel();
  sessions_.closeOwner(owner_);
}

}  // namespace server
