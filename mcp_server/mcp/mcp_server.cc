#include "mcp/mcp_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <optional>

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/input_required.h"
#include "mcp/parked_request.h"
#include "mcp/tool_wire.h"

namespace mcp {
namespace {

using jsonrpc::json;

constexpr std::array<const char*, 3> kSupportedVersions{"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr const char* kServerName = "sandbox-mcp";
constexpr const char* kServerVersion = "0.1.0";

using era::logLevelIndex;

// How long a tool waits for its client to answer a request (a person may be filling a form).
constexpr std::chrono::minutes kClientAnswerTimeout{5};

// A batch holding a 2026-07-28 request: that revision has no batches.
bool batchHoldsModernRequest(const json& message) {
  return message.is_array() && std::any_of(message.begin(), message.end(), [](const json& item) {
           return item.is_object() && era::isModern(era::paramsOf(item));
         });
}

const char* kInstructions =
    "Runs code in isolated, network-less sandboxes (Docker + gVisor). run_code executes Python "
    "(or JavaScript with language \"javascript\") and keeps state per session (variables "
    "persist; a trailing expression's value is returned as result). run_shell runs /bin/sh "
    "commands in the same sandbox. upload_file, download_file and list_files move files in and "
    "out. Omit session_id on the first call and reuse the returned session_id afterwards; "
    "cleanup_session ends it. Figures (plt.show(), figures open at the end of a cell, "
    "display(obj)) come back as images. Output beyond the cap is saved in the sandbox and the "
    "result links it as sandbox://{session_id}/{path}: read it in ranges with resources/read, "
    "or with download_file. For long runs raise timeout; clients with MCP tasks can run "
    "run_code and run_shell as tasks (tasks/get, tasks/result, tasks/cancel) that outlive a "
    "request timeout. Sandboxes have no network access and cannot install packages from the "
    "internet.";

// The product's identity where the features name none.
ServerFeatures withIdentity(ServerFeatures features) {
  if (features.identity.name.empty()) {
    features.identity = {kServerName, "Sandbox MCP", kServerVersion, kInstructions};
  }
  return features;
}

// The line a tools/call waits in: the sandbox session its arguments name; empty for none.
std::string sessionKey(const json& params) {
  if (!params.is_object()) return {};
  const auto arguments = params.find("arguments");
  if (arguments == params.end() || !arguments->is_object()) return {};
  const auto session = arguments->find("session_id");
  if (session == arguments->end() || !session->is_string() || session->empty()) return {};
  return "session\n" + session->get<std::string>();
}

// The answer to a tools/call cancelled before its turn came: it ran nothing.
json cancelledBeforeItRan(const std::string& lane_key) {
  return toCallResult(tools::ToolResult::failure(
      lane_key.empty()
          ? "The call was cancelled before it started."
          : "The call was cancelled while it waited for an earlier call to the same session."));
}

}  // namespace

bool isSupportedProtocolVersion(const std::string& version) {
  for (const char* v : kSupportedVersions) {
    if (version == v) return true;
  }
  return false;
}

McpServer::McpServer(const config::ServerConfig& config, server::SessionRegistry& sessions,
                     const tools::ToolRegistry& tools, const tools::ToolMetrics* metrics,
                     std::vector<config::Principal> principals, ServerFeatures features)
    : config_(config),
      sessions_(sessions),
      tools_(tools),
      metrics_(metrics),
      principals_(std::move(principals)),
      features_(withIdentity(std::move(features))),
      task_threads_(static_cast<std::size_t>(config.execution.max_concurrent)),
      task_memory_(static_cast<std::size_t>(config.tasks.max_result_bytes),
                   static_cast<std::size_t>(config.tasks.max_queued_bytes)) {
  if (features_.subscriptions != nullptr || !features_.session_resources) return;
  Announceable offered;
  offered.resources_list_changed = true;
  offered.resource_updates = true;
  own_subscriptions_ = std::make_unique<Subscriptions>(offered);
  file_watch_ = std::make_unique<SandboxFileWatch>(sessions_, *own_subscriptions_);
  features_.subscriptions = own_subscriptions_.get();
  features_.file_watch = file_watch_.get();
  Subscriptions* hub = own_subscriptions_.get();
  sessions_.resourceEvents().setListener(
      [hub](const std::string& owner) { hub->resourcesChanged(owner); });
}

McpServer::~McpServer() {
  if (own_subscriptions_) sessions_.resourceEvents().setListener({});
}

std::shared_ptr<jsonrpc::Endpoint> McpServer::open(const std::string& owner,
                                                   const jsonrpc::Principal& principal) {
  return std::make_shared<McpEndpoint>(callerFor(owner, principal), config_, sessions_, tools_,
                                       task_threads_, metrics_, &announcements_, &task_memory_,
                                       &features_, &seal_);
}

server::Caller McpServer::callerFor(const std::string& owner,
                                    const jsonrpc::Principal& principal) const {
  server::Caller caller{owner, owner,
                        static_cast<std::size_t>(config_.sessions.max_sessions_per_client),
                        static_cast<std::size_t>(config_.execution.max_concurrent_per_client)};
  if (!principal.from_tokens_file) return caller;
  caller.quota_key = "principal:" + principal.name;
  for (const auto& known : principals_) {
    if (known.name != principal.name) continue;
    if (known.max_sessions) caller.max_sessions = static_cast<std::size_t>(*known.max_sessions);
    if (known.max_concurrent_executions) {
      caller.max_concurrent_executions = static_cast<std::size_t>(*known.max_concurrent_executions);
    }
  }
  return caller;
}

McpEndpoint::McpEndpoint(server::Caller caller, const config::ServerConfig& config,
                         server::SessionRegistry& sessions, const tools::ToolRegistry& tools,
                         server::ExecutionSlots& task_threads, const tools::ToolMetrics* metrics,
                         Announcements* announcements, TaskMemory* task_memory,
                         const ServerFeatures* features, const RequestStateSeal* seal)
    : caller_(std::move(caller)),
      config_(config),
      sessions_(sessions),
      tools_(tools),
      metrics_(metrics),
      announcements_(announcements),
      features_(withIdentity(features != nullptr ? *features : ServerFeatures{})),
      own_seal_(seal == nullptr ? std::make_unique<RequestStateSeal>() : nullptr),
      seal_(seal != nullptr ? *seal : *own_seal_),
      resources_(sessions, config),
      tasks_(caller_, config, sessions, lanes_, task_threads, metrics, task_memory) {
  tasks_.afterEachCall([this](const json& arguments) { announceFileChanges(arguments); });
  dispatcher_.onRequest("initialize", [this](const json& params, jsonrpc::CallContext& call) {
    return initialize(params, call.transport);
  });
  dispatcher_.onRequest("server/discover", [this](const json&, auto&) { return discover(); });
  dispatcher_.onRequest("ping", [](const json&, auto&) { return json::object(); });
  dispatcher_.onRequest("tools/list", [this](const json& params, auto&) {
    requireInitialized(params);
    return era::cacheable(tools_.list(), era::kStaticTtlMs, "public");
  });
  dispatcher_.onRequest("tools/call", [this](const json& params, jsonrpc::CallContext& call) {
    return callTool(params, call);
  });
  registerCatalogMethods();
  dispatcher_.onRequest("logging/setLevel",
                        [this](const json& params, auto&) { return setLogLevel(params); });
  registerTaskMethods();
  dispatcher_.onResponse([this](const json& response) { client_requests_.deliver(response); });
  dispatcher_.onNotification("notifications/initialized", [](const json&, auto&) {});
  dispatcher_.onNotification("notifications/cancelled",
                             [this](const json& params, auto&) { cancelled(params); });
}

std::optional<json> McpEndpoint::handle(const json& message, jsonrpc::RequestContext& ctx) {
  if (era::isSingleRequest(message)) {
    if (auto refused = era::refusal(message)) return refused;
  } else if (batchHoldsModernRequest(message)) {
    return jsonrpc::makeError(nullptr, jsonrpc::kInvalidRequest,
                              "Invalid Request: MCP 2026-07-28 has no batches; send each request "
                              "on its own");
  }
  return dispatcher_.handle(message, ctx);
}

std::string McpEndpoint::orderingKey(const json& message) const {
  if (!message.is_object() || message.value("method", json()) != "tools/call") return {};
  const auto params = message.find("params");
  if (params == message.end()) return {};
  return sessionKey(*params);
}

std::shared_ptr<CancelToken> McpEndpoint::admit(const json& message) {
  if (!message.is_object()) return nullptr;  // a batch: callTool registers its elements
  const auto id = message.find("id");
  const auto method = message.find("method");
  if (id == message.end() || method == message.end()) return nullptr;
  if (*method != "tools/call" && *method != "tasks/result" && *method != "subscriptions/listen") {
    return nullptr;
  }
  return requests_.admit(*id);
}

std::string McpEndpoint::protocolVersion() const {
  std::lock_guard lock(mutex_);
  return protocol_version_;
}

json McpEndpoint::initialize(const json& params, const jsonrpc::RequestContext& transport) {
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
    const json declared = params.value("capabilities", json::object());
    client_capabilities_ = declared.is_object() ? declared : json::object();
  }
  const auto client = params.value("clientInfo", json::object());
  spdlog::info("client {} {} initialized (protocol {})", client.value("name", "?"),
               client.value("version", "?"), version);
  json capabilities = this->capabilities();
  if (features_.file_watch != nullptr) {
    // The sessions' announcements reach a 2025 client only where a notification may follow its
    // request (stdio); 2025 over HTTP would need a GET stream, which this server does not keep.
    const bool deliverable = transport.notify_outlives_request && transport.notify;
    capabilities["resources"] = {{"subscribe", deliverable}, {"listChanged", deliverable}};
    if (deliverable) listenForListChanges(transport.notify);
  }
  capabilities["tasks"] = {{"list", json::object()},
                           {"cancel", json::object()},
                           {"requests", {{"tools", {{"call", json::object()}}}}}};
  json result{{"protocolVersion", version},
              {"capabilities", std::move(capabilities)},
              {"serverInfo", serverInfo()}};
  if (!instructions().empty()) result["instructions"] = instructions();
  return result;
}

json McpEndpoint::discover() const {
  json capabilities = this->capabilities();
  capabilities["extensions"] = {{era::kTasksExtension, json::object()}};
  json result{{"supportedVersions", era::supportedVersions()},
              {"capabilities", std::move(capabilities)},
              {"_meta", {{era::kServerInfoKey, serverInfo()}}}};
  if (!instructions().empty()) result["instructions"] = instructions();
  return era::cacheable(std::move(result), era::kStaticTtlMs, "public");
}

json McpEndpoint::serverInfo() const {
  const ServerIdentity& identity = features_.identity;
  json info{{"name", identity.name}, {"version", identity.version}};
  if (!identity.title.empty()) info["title"] = identity.title;
  return info;
}

const std::string& McpEndpoint::instructions() const { return features_.identity.instructions; }

void McpEndpoint::requireInitialized(const json& params) const {
  if (era::isModern(params)) return;  // 2026-07-28: every request carries what initialize did
  std::lock_guard lock(mutex_);
  if (protocol_version_.empty()) {
    throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                         "Server not initialized: send an initialize request first");
  }
}

json McpEndpoint::callTool(const json& params, jsonrpc::CallContext& call) {
  requireInitialized(params);
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
  std::string lane_key = sessionKey(params);
  // Cancelled while it waited in the transport, which then let it past the calls before it: it
  // must not start a task or take a place in the session's line.
  if (call.transport.cancel && call.transport.cancel->cancelled()) {
    return cancelledBeforeItRan(lane_key);
  }
  const tools::Tool* tool = tools_.find(name->get<std::string>());
  if (tool != nullptr) {  // an unknown tool gets the usual error below
    if (auto task = callAsTask(*tool, params, arguments, lane_key, call)) return *task;
  }
  if (tool == nullptr) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "Unknown tool: " + name->get<std::string>() +
                                                      " (available: " + tools_.names() + ")");
  }
  if (era::isModern(params)) {
    const json missing =
        missingCapabilities(tool->spec.required_client_capabilities, declaredCapabilities(params));
    if (!missing.empty()) {
      throw jsonrpc::Error(era::kMissingRequiredClientCapability,
                           tool->spec.name +
                               " needs client capabilities this request does not "
                               "declare in params._meta[\"" +
                               std::string(era::kClientCapabilitiesKey) + "\"]",
                           json{{"requiredCapabilities", missing}});
    }
  }
  const auto token = cancelTokenFor(call);
  // Wait for earlier calls and tasks naming the same session (the transport keeps arrival order).
  auto place = lanes_.enqueue(lane_key);
  if (!place.isFirst()) {
    if (auto reply = call.answerLater(); reply && call.transport.run_on_worker) {
      waitTurnLater(*tool, params, std::move(place), token, std::move(reply), call.transport);
      return json();
    }
    if (!place.waitTurn(*token)) return cancelledBeforeItRan(lane_key);  // a batch element
  }
  return runTool(*tool, params, arguments, *token, call.transport);
}

void McpEndpoint::waitTurnLater(const tools::Tool& tool, const json& params,
                                SessionLanes::Place place, std::shared_ptr<CancelToken> token,
                                std::shared_ptr<jsonrpc::Reply> reply,
                                const jsonrpc::RequestContext& transport) {
  auto parked = std::make_shared<ParkedRequest>(std::move(reply));
  auto shared_place = std::make_shared<SessionLanes::Place>(std::move(place));
  auto request = std::make_shared<jsonrpc::RequestContext>(transport);  // notify, cancel, ...
  auto shared_params = std::make_shared<json>(params);  // the transport's copy goes meanwhile
  const std::string lane_key = sessionKey(params);
  shared_place->whenTurn([this, &tool, parked, shared_place, request, shared_params, token] {
    if (!parked->claim()) return;
    const bool queued =
        request->run_on_worker([this, &tool, parked, shared_place, request, shared_params, token] {
          parked->reply().complete([&] {
            static const json kNoArguments = json::object();
            const auto given = shared_params->find("arguments");
            const json& arguments = given != shared_params->end() ? *given : kNoArguments;
            return runTool(tool, *shared_params, arguments, *token, *request);
          });
          shared_place->leave();
        });
    if (!queued) {
      shared_place->leave();
      parked->reply().complete([]() -> json {
        throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the server is shutting down");
      });
    }
  });
  // Only the client's cancellation ends this wait early: a call whose connection went away still
  // runs when its turn comes (MCP: a disconnection is not a cancellation).
  parked->watch(token, nullptr, [shared_place, lane_key](ParkedRequest& ended, bool) {
    shared_place->leave();
    ended.reply().complete([&lane_key] { return cancelledBeforeItRan(lane_key); });
  });
}

json McpEndpoint::runTool(const tools::Tool& tool, const json& params, const json& arguments,
                          CancelToken& cancel, jsonrpc::RequestContext& transport) {
  std::optional<Announcements::Subscription> notices;
  if (announcements_ != nullptr) {
    notices.emplace(announcements_->listen([this, &transport, &params](const std::string& text) {
      serverNotice(transport, params, text);
    }));
  }
  RequestUpdates updates(transport.notify, progressToken(params), clientLogsOutput(params));
  letToolsAsk(updates, params, cancel, transport);
  const std::string purpose = "tools/call:" + tool.spec.name;
  const tools::ToolInputs inputs = era::isModern(params)
                                       ? requestInputs(params, seal_, caller_.owner, purpose)
                                       : tools::ToolInputs{};
  tools::ToolContext ctx{caller_, cancel, sessions_, config_, updates, metrics_, &inputs};
  const auto started = std::chrono::steady_clock::now();
  tools::ToolResult result = tools::callTool(tool, arguments, ctx);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::debug("tools/call {} finished in {:.1f} ms (isError={})", tool.spec.name, ms,
                result.is_error);
  if (!result.input_requests.empty()) return inputRequired(result, params, purpose);
  announceFileChanges(arguments);
  result.meta[std::string(tools::kTimingMetaKey)]["server_ms"] = ms;
  if (result.is_error) {
    clientLog(transport, params, "warning", tool.spec.name + " failed: " + result.text);
  }
  return toCallResult(std::move(result));
}

void McpEndpoint::announceFileChanges(const json& arguments) {
  if (features_.file_watch == nullptr || !arguments.is_object()) return;
  const json session_id = arguments.value("session_id", json());
  if (session_id.is_string() && !session_id.empty()) {
    features_.file_watch->afterCall(caller_.owner, session_id.get<std::string>());
  }
}

void McpEndpoint::letToolsAsk(RequestUpdates& updates, const json& params, CancelToken& cancel,
                              const jsonrpc::RequestContext& transport) {
  if (era::isModern(params) || !transport.notify) return;
  updates.setAsk([this, &cancel, send = transport.notify](
                     const std::string& method, const json& request) -> std::optional<json> {
    const char* capability = method == "sampling/createMessage" ? "sampling"
                             : method == "elicitation/create"   ? "elicitation"
                             : method == "roots/list"           ? "roots"
                                                                : nullptr;
    {
      std::lock_guard lock(mutex_);
      if (capability == nullptr || !client_capabilities_.contains(capability)) return std::nullopt;
    }
    return client_requests_.ask(send, method, request, cancel, kClientAnswerTimeout);
  });
}

json McpEndpoint::inputRequired(const tools::ToolResult& result, const json& params,
                                const std::string& purpose) const {
  if (!era::isModern(params)) {
    return toCallResult(tools::ToolResult::failure(
        "This call needs input from the client (MCP 2026-07-28 input-required results); "
        "connect with a 2026-07-28 client to use it"));
  }
  return inputRequiredResult(result.input_requests, result.request_state,
                             declaredCapabilities(params), seal_, caller_.owner, purpose);
}

json McpEndpoint::progressToken(const json& params) {
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  return meta->value("progressToken", json(nullptr));
}

std::shared_ptr<CancelToken> McpEndpoint::cancelTokenFor(jsonrpc::CallContext& call) {
  if (call.transport.cancel) return call.transport.cancel;
  auto token = requests_.admit(call.id);
  if (!token) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
  return token;
}

int McpEndpoint::logLevelFor(const json& params) const {
  if (era::isModern(params)) return era::requestLogLevel(params);
  std::lock_guard lock(mutex_);
  return client_log_level_;
}

bool McpEndpoint::clientLogsOutput(const json& params) const {
  const int level = logLevelFor(params);
  return level >= 0 && level <= logLevelIndex("info");
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

void McpEndpoint::clientLog(jsonrpc::RequestContext& ctx, const json& params,
                            const std::string& level, const std::string& text) {
  const int wanted = logLevelFor(params);
  if (wanted < 0 || logLevelIndex(level) < wanted) return;
  if (!ctx.notify) return;
  ctx.notify(json{{"jsonrpc", "2.0"},
                  {"method", "notifications/message"},
                  {"params", {{"level", level}, {"logger", "sandbox-mcp"}, {"data", text}}}});
}

void McpEndpoint::serverNotice(jsonrpc::RequestContext& ctx, const json& params,
                               const std::string& text) {
  const int wanted = logLevelFor(params);
  // 2025: warnings go out unless the client set a level above them. 2026-07-28: only to a request
  // that asked for logs (MUST NOT otherwise).
  const bool modern = era::isModern(params);
  if ((modern && wanted < 0) || wanted > logLevelIndex("warning")) return;
  if (!ctx.notify) return;
  ctx.notify(json{{"jsonrpc", "2.0"},
                  {"method", "notifications/message"},
                  {"params", {{"level", "warning"}, {"logger", "sandbox-mcp"}, {"data", text}}}});
}

void McpEndpoint::cancelled(const json& params) {
  const auto id = params.find("requestId");
  if (id == params.end()) return;
  // False when it finished already, or never existed: nothing to do.
  if (!requests_.cancel(*id)) return;
  spdlog::info("request {} cancelled by the client ({})", id->dump(),
               params.value("reason", "no reason given"));
}

void McpEndpoint::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  requests_.closeAll();  // running requests, and admitted ones still waiting for their turn
  client_requests_.closeAll();
  stopResourceSubscriptions();
  tasks_.shutdown();  // cancels and joins the connection's tasks before their sessions go
  sessions_.closeOwner(caller_.owner);
}

McpEndpoint::~McpEndpoint() { tasks_.shutdown(); }

}  // namespace mcp
