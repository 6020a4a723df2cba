// McpEndpoint's part of MCP tasks: starting a task-augmented tools/call and the tasks/* methods.
// The work itself is TaskRunner's.
#include <chrono>

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/input_required.h"
#include "mcp/mcp_server.h"
#include "tools/schema_validator.h"

namespace mcp {

using jsonrpc::json;

std::optional<json> McpEndpoint::callAsTask(const tools::Tool& tool, const json& params,
                                            const json& arguments, std::string& lane_key,
                                            jsonrpc::CallContext& call) {
  const bool required = tool.spec.task_support == tools::TaskSupport::kRequired;
  if (!era::isModern(params)) {
    if (params.contains("task")) return startTask(tool, params, arguments, lane_key, call);
    if (!required) return std::nullopt;
    // MCP 2025-11-25: a tool whose taskSupport is "required" called without params.task.
    throw jsonrpc::Error(jsonrpc::kMethodNotFound, "Tool " + tool.spec.name +
                                                       " runs only as a task (tools/list: "
                                                       "execution.taskSupport is \"required\"); "
                                                       "call it with params.task");
  }
  // 2026-07-28: the extension's task, for the tools that can run as one (the server decides: a
  // long call becomes a task); the request must declare the extension (params.task is a 2025
  // hint, ignored here).
  if (tool.spec.task_support == tools::TaskSupport::kForbidden) return std::nullopt;
  if (era::declaresTasksExtension(params)) return startOrInline(tool, params, arguments, lane_key);
  if (required) throw era::tasksExtensionRequired("tools/call of " + tool.spec.name);
  return std::nullopt;
}

json McpEndpoint::startTask(const tools::Tool& tool, const json& params, const json& arguments,
                            std::string lane_key, jsonrpc::CallContext& call) {
  if (tool.spec.task_support == tools::TaskSupport::kForbidden) {
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
                          call.transport.notify_outlives_request ? call.transport.notify : nullptr,
                          false,
                          {}};
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

json McpEndpoint::startOrInline(const tools::Tool& tool, const json& params, const json& arguments,
                                std::string lane_key) {
  checkTaskCanStart(tool, arguments);
  const std::string purpose = "tools/call:" + tool.spec.name;
  // The extension's tasks carry no notifications: their status is polled.
  TaskRunner::Start start{tool,
                          arguments,
                          json::object(),
                          nullptr,
                          std::move(lane_key),
                          false,
                          nullptr,
                          true,
                          requestInputs(params, seal_, caller_.owner, purpose)};  // MRTR retry's
  const bool optional = tool.spec.task_support == tools::TaskSupport::kOptional;
  auto answer = tasks_.startOrInline(std::move(start), optional);
  if (answer.asked) return inputRequired(*answer.asked, params, purpose);
  return std::move(answer.result);
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
