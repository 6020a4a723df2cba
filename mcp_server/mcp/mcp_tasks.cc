// McpEndpoint's part of MCP tasks: starting a task-augmented tools/call and the tasks/* methods.
// The work itself is TaskRunner's.
#include <chrono>

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/mcp_server.h"
#include "tools/schema_validator.h"

namespace mcp {

using jsonrpc::json;

namespace {

// How long a tools/call of a client with the tasks extension may run before it answers with a
// task instead of its result: most calls finish well within it and answer as usual.
constexpr std::chrono::milliseconds kInlineWait{1000};

}  // namespace

json McpEndpoint::startTask(const tools::Tool& tool, const json& params, const json& arguments,
                            std::string lane_key, jsonrpc::CallContext& call) {
  if (tool.spec.task_support != tools::TaskSupport::kOptional) {
    throw jsonrpc::Error(jsonrpc::kMethodNotFound,
                         "Tool " + tool.spec.name +
                             " does not run as a task (tools/list: execution.taskSupport is "
                             "\"forbidden\"); call it without params.task");
  }
  checkTaskCanStart(tool, arguments);
  TaskRunner::Start start{tool,
                          arguments,
                          params.at("task"),
                          progressToken(params),
                          std::move(lane_key),
                          clientLogsOutput(params),
                          call.transport.notify_outlives_request ? call.transport.notify : nullptr};
  return tasks_.start(std::move(start));
}

void McpEndpoint::checkTaskCanStart(const tools::Tool& tool, const json& arguments) {
  // Checked now: a task that fails on its arguments would tell a polling client only "failed".
  if (auto problem = tools::validateAgainstSchema(arguments, tool.spec.input_schema, "arguments")) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "Invalid arguments for " + tool.spec.name + ": " + *problem);
  }
  std::lock_guard lock(mutex_);
  if (closed_) throw jsonrpc::Error(jsonrpc::kInvalidRequest, "the connection is closing");
}

json McpEndpoint::startOrInline(const tools::Tool& tool, const json& arguments,
                                std::string lane_key) {
  checkTaskCanStart(tool, arguments);
  // The extension's tasks carry no notifications: their status is polled.
  TaskRunner::Start start{tool,  arguments, json::object(), nullptr, std::move(lane_key),
                          false, nullptr};
  return tasks_.startOrInline(std::move(start), kInlineWait);
}

void McpEndpoint::registerTaskMethods() {
  // tasks/get and tasks/cancel: 2025's, or the tasks extension's for 2026-07-28 requests.
  const auto extension = [](const json& params, const char* method) {
    if (!era::isModern(params)) return false;
    if (!era::declaresTasksExtension(params)) throw era::tasksExtensionRequired(method);
    return true;
  };
  dispatcher_.onRequest("tasks/get", [this, extension](const json& params, auto&) {
    if (extension(params, "tasks/get")) return tasks_.getExtension(params);
    requireInitialized(params);
    return tasks_.get(params);
  });
  dispatcher_.onRequest("tasks/update", [this, extension](const json& params, auto&) {
    if (!extension(params, "tasks/update")) {
      throw jsonrpc::Error(jsonrpc::kMethodNotFound,
                           "Method not found: tasks/update belongs to the 2026-07-28 tasks "
                           "extension");
    }
    return tasks_.updateExtension(params);
  });
  dispatcher_.onRequest("tasks/result", [this](const json& params, jsonrpc::CallContext& call) {
    requireInitialized(params);
    const auto cancel = cancelTokenFor(call);  // notifications/cancelled ends the wait
    if (auto reply = call.answerLater()) {     // waits holding no thread
      tasks_.resultLater(params, call.transport.notify, std::move(reply), cancel,
                         call.transport.abandoned);
      return json();
    }
    return tasks_.result(params, call.transport.notify, *cancel);
  });
  dispatcher_.onRequest("tasks/list", [this](const json& params, auto&) {
    requireInitialized(params);
    return tasks_.list(params);
  });
  dispatcher_.onRequest("tasks/cancel", [this, extension](const json& params, auto&) {
    if (extension(params, "tasks/cancel")) return tasks_.cancelExtension(params);
    requireInitialized(params);
    return tasks_.cancel(params);
  });
}

}  // namespace mcp
