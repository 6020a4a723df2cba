// The MCP protocol layer: lifecycle (initialize, ping; server/discover for 2026-07-28 requests,
// which carry their version and capabilities each: protocol_era.h), tools, tasks,
// logging/setLevel and cancellation.
// McpServer is the EndpointFactory transports use; each client connection (and each principal's
// stateless requests) gets an McpEndpoint whose sandbox sessions belong to it alone; quotas count
// per connection, or per principal for the tokens file's principals (server/caller.h).
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/cancel_token.h"
#include "config/config.h"
#include "config/principals.h"
#include "jsonrpc/dispatcher.h"
#include "jsonrpc/endpoint.h"
#include "mcp/announcements.h"
#include "mcp/cancellable_requests.h"
#include "mcp/client_requests.h"
#include "mcp/request_state.h"
#include "mcp/sandbox_file_watch.h"
#include "mcp/server_features.h"
#include "mcp/session_lanes.h"
#include "mcp/session_resources.h"
#include "mcp/task_runner.h"
#include "mcp/tool_wire.h"
#include "server/execution_slots.h"
#include "server/session_registry.h"
#include "tools/tool_metrics.h"
#include "tools/tool_registry.h"

namespace mcp {

inline constexpr const char* kLatestProtocolVersion = "2025-11-25";
[[nodiscard]] bool isSupportedProtocolVersion(const std::string& version);

class McpServer : public jsonrpc::EndpointFactory {
 public:
  // `metrics`, when set, counts every tool call (GET /metrics); it must outlive the server.
  // `features`: what the server offers beside its tools (server_features.h); the product's
  // identity when left empty. `principals` (the tokens file) give their principals' quotas.
  McpServer(const config::ServerConfig& config, server::SessionRegistry& sessions,
            const tools::ToolRegistry& tools, const tools::ToolMetrics* metrics = nullptr,
            std::vector<config::Principal> principals = {}, ServerFeatures features = {});
  ~McpServer() override;  // stops the sessions' resource events reaching it
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  using jsonrpc::EndpointFactory::open;
  std::shared_ptr<jsonrpc::Endpoint> open(const std::string& owner,
                                          const jsonrpc::Principal& principal) override;
  // tools/list's result: the same for every client.
  [[nodiscard]] jsonrpc::json toolsList() const { return tools_.list(); }
  // Whose sessions and limits a connection of `principal` under `owner` uses.
  [[nodiscard]] server::Caller callerFor(const std::string& owner,
                                         const jsonrpc::Principal& principal) const;

  // Sends `text` as a notifications/message warning to the client of every tools/call running
  // now and of every one started later (e.g. the server is draining).
  void announce(std::string text) { announcements_.announce(std::move(text)); }

  // What all clients' tasks keep in memory (GET /metrics).
  [[nodiscard]] TaskMemory& taskMemory() { return task_memory_; }

  // tools/call requests running now, plain ones and tasks (any tool: executions, transfers).
  [[nodiscard]] std::size_t callsInFlight() {
    return announcements_.listening() + task_threads_.inUse();
  }

 private:
  const config::ServerConfig& config_;
  server::SessionRegistry& sessions_;
  const tools::ToolRegistry& tools_;
  const tools::ToolMetrics* metrics_;
  const std::vector<config::Principal> principals_;
  // Declared before features_, which points at them when the product brings its own.
  std::unique_ptr<Subscriptions> own_subscriptions_;
  std::unique_ptr<SandboxFileWatch> file_watch_;
  ServerFeatures features_;
  RequestStateSeal seal_;  // one key per process: input-required states of every endpoint
  Announcements announcements_;
  server::ExecutionSlots task_threads_;  // tasks running server-wide, each on a thread of its own
  TaskMemory task_memory_;               // what all clients' tasks keep
};

class McpEndpoint : public jsonrpc::Endpoint {
 public:
  McpEndpoint(server::Caller caller, const config::ServerConfig& config,
              server::SessionRegistry& sessions, const tools::ToolRegistry& tools,
              server::ExecutionSlots& task_threads, const tools::ToolMetrics* metrics = nullptr,
              Announcements* announcements = nullptr, TaskMemory* task_memory = nullptr,
              const ServerFeatures* features = nullptr, const RequestStateSeal* seal = nullptr);
  ~McpEndpoint() override;

  std::optional<jsonrpc::json> handle(const jsonrpc::json& message,
                                      jsonrpc::RequestContext& ctx) override;
  void close() override;
  [[nodiscard]] std::string protocolVersion() const override;
  // tools/call naming a session_id: calls to one session run in arrival order.
  [[nodiscard]] std::string orderingKey(const jsonrpc::json& message) const override;
  // tools/call and tasks/result: cancellable from arrival, also while they wait their turn.
  [[nodiscard]] std::shared_ptr<CancelToken> admit(const jsonrpc::json& message) override;

 private:
  jsonrpc::json initialize(const jsonrpc::json& params, const jsonrpc::RequestContext& transport);
  // 2025 over stdio: notifications/resources/list_changed for the owner's sessions, unasked.
  void listenForListChanges(const std::function<void(const jsonrpc::json&)>& notify);
  // server/discover (2026-07-28): versions, capabilities, instructions; serverInfo in _meta.
  [[nodiscard]] jsonrpc::json discover() const;
  // What both eras declare: exactly what this server has (2025 adds its tasks).
  [[nodiscard]] jsonrpc::json capabilities() const;
  [[nodiscard]] jsonrpc::json serverInfo() const;
  [[nodiscard]] const std::string& instructions() const;
  // prompts/*, completion/complete, resources/* (the catalog's and the sessions'),
  // subscriptions/listen: mcp_catalogs.cc.
  void registerCatalogMethods();
  [[nodiscard]] jsonrpc::json listResources(const jsonrpc::json& params);
  [[nodiscard]] jsonrpc::json listResourceTemplates(const jsonrpc::json& params);
  [[nodiscard]] jsonrpc::json readResource(const jsonrpc::json& params);
  [[nodiscard]] jsonrpc::json getPrompt(const jsonrpc::json& params);
  // Opens a listen stream: the ack first, then the changes it asked for, until the client
  // closes it (HTTP: hangs up; stdio: notifications/cancelled) or the endpoint closes.
  jsonrpc::json listen(const jsonrpc::json& params, jsonrpc::CallContext& call);
  // 2025 resources/subscribe and unsubscribe: notifications/resources/updated for the URI go on
  // the subscribing request's notify while it outlives the request (stdio); Streamable HTTP has
  // no standalone stream here to carry them.
  jsonrpc::json subscribeResource(const jsonrpc::json& params, jsonrpc::CallContext& call);
  jsonrpc::json unsubscribeResource(const jsonrpc::json& params);
  void stopResourceSubscriptions();
  // How a 2025 tools/call's tool asks its client (RequestUpdates::setAsk); unset for a modern
  // request (input-required results instead) and where nothing can carry a request.
  // After a tool call naming a session: tells the owner's subscribers which files it changed.
  void announceFileChanges(const jsonrpc::json& arguments);
  void letToolsAsk(RequestUpdates& updates, const jsonrpc::json& params, CancelToken& cancel,
                   const jsonrpc::RequestContext& transport);
  // A tool's input-required answer (2026-07-28), or its refusal for a 2025 request.
  [[nodiscard]] jsonrpc::json inputRequired(const tools::ToolResult& result,
                                            const jsonrpc::json& params,
                                            const std::string& purpose) const;
  jsonrpc::json callTool(const jsonrpc::json& params, jsonrpc::CallContext& call);
  // A tools/call behind an earlier call or task to the same session: parked without a thread
  // until its turn, then run on a transport worker and answered through `reply`.
  void waitTurnLater(const tools::Tool& tool, const jsonrpc::json& params,
                     SessionLanes::Place place, std::shared_ptr<CancelToken> token,
                     std::shared_ptr<jsonrpc::Reply> reply,
                     const jsonrpc::RequestContext& transport);
  jsonrpc::json runTool(const tools::Tool& tool, const jsonrpc::json& params,
                        const jsonrpc::json& arguments, CancelToken& cancel,
                        jsonrpc::RequestContext& transport);
  // A task-augmented tools/call (params.task): answers with the CreateTaskResult at once.
  jsonrpc::json startTask(const tools::Tool& tool, const jsonrpc::json& params,
                          const jsonrpc::json& arguments, std::string lane_key,
                          jsonrpc::CallContext& call);
  // The task a tools/call of `tool` runs as, or nullopt for an ordinary call (mcp_tasks.cc):
  // 2025's when params.task asks for one; the extension's for a 2026-07-28 request that declares
  // it. Throws for a tool that requires a task when the request cannot take one.
  std::optional<jsonrpc::json> callAsTask(const tools::Tool& tool, const jsonrpc::json& params,
                                          const jsonrpc::json& arguments, std::string& lane_key,
                                          jsonrpc::CallContext& call);
  // A tools/call of a 2026-07-28 client with the tasks extension: its result, or a task when it
  // runs longer than a moment.
  jsonrpc::json startOrInline(const tools::Tool& tool, const jsonrpc::json& params,
                              const jsonrpc::json& arguments, std::string lane_key);
  // Throws unless a task may start now for `tool` with `arguments`.
  void checkTaskCanStart(const tools::Tool& tool, const jsonrpc::json& arguments);
  // tasks/get, tasks/result, tasks/list, tasks/cancel; tasks/update (the extension's).
  void registerTaskMethods();
  // The request's cancel token: the one the transport admitted, else one registered now (a batch
  // element, a direct handle() call) for as long as the caller keeps it.
  [[nodiscard]] std::shared_ptr<CancelToken> cancelTokenFor(jsonrpc::CallContext& call);
  // The request's params._meta.progressToken, or null.
  [[nodiscard]] static jsonrpc::json progressToken(const jsonrpc::json& params);
  // The log level that applies to a request: its own _meta's (2026-07-28), else the one
  // logging/setLevel set for the connection; -1: none.
  [[nodiscard]] int logLevelFor(const jsonrpc::json& params) const;
  [[nodiscard]] bool clientLogsOutput(const jsonrpc::json& params) const;
  jsonrpc::json setLogLevel(const jsonrpc::json& params);
  void cancelled(const jsonrpc::json& params);
  // Throws unless initialize came first, or the request is a 2026-07-28 one (self-contained).
  void requireInitialized(const jsonrpc::json& params) const;
  // Sends notifications/message to the client when it asked for logs at that level.
  void clientLog(jsonrpc::RequestContext& ctx, const jsonrpc::json& params,
                 const std::string& level, const std::string& text);
  // A warning from the server itself (Announcements): sent unless the client set a log level
  // above warning.
  void serverNotice(jsonrpc::RequestContext& ctx, const jsonrpc::json& params,
                    const std::string& text);

  const server::Caller caller_;
  const config::ServerConfig& config_;
  server::SessionRegistry& sessions_;
  const tools::ToolRegistry& tools_;
  const tools::ToolMetrics* metrics_;
  Announcements* announcements_;
  const ServerFeatures features_;
  std::unique_ptr<RequestStateSeal> own_seal_;  // when constructed without the server's
  const RequestStateSeal& seal_;
  SessionResources resources_;
  jsonrpc::Dispatcher dispatcher_;

  mutable std::mutex mutex_;
  std::string protocol_version_;
  jsonrpc::json client_capabilities_ = jsonrpc::json::object();  // from initialize (2025)
  // 2025: URI -> Subscriptions key; "" -> the unasked list-changes stream (stdio).
  std::map<std::string, std::uint64_t> resource_subscriptions_;
  int client_log_level_ = -1;  // index into the MCP levels; -1 until logging/setLevel
  bool closed_ = false;
  CancellableRequests requests_;    // what notifications/cancelled and close() can reach
  ClientRequests client_requests_;  // what a 2025 tools/call asks its client

  SessionLanes lanes_;  // executions naming one session run one at a time, tasks included
  // Last: destroyed first, so no task thread outlives the members it uses.
  TaskRunner tasks_;
};

}  // namespace mcp
