// Tools of the conformance fixtures for the tasks extension (io.modelcontextprotocol/tasks, MCP
// 2026-07-28). The MCP layer decides what becomes a task: a call of a task-supporting tool that
// runs past tasks.inline_wait_ms (250 ms in conformance_server), and every call of a tool that
// requires one. A tool that asks for input before that answers with an input-required result
// (MRTR); past it, its task shows input_required until tasks/update brings the answers.
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "fixtures.h"

namespace conformance {
namespace {

using tools::json;
using tools::TaskSupport;
using tools::Tool;
using tools::ToolContext;
using tools::ToolResult;

// Long enough that a tool asking for input after it has become a task, not before.
constexpr std::chrono::milliseconds kPastInlineWait{600};

Tool tool(std::string name, std::string description, TaskSupport support, json properties,
          tools::ToolHandler handler) {
  Tool out;
  out.spec.name = std::move(name);
  out.spec.description = std::move(description);
  out.spec.input_schema = {{"type", "object"}, {"properties", std::move(properties)}};
  out.spec.output_schema = nullptr;
  out.spec.task_support = support;
  out.handler = std::move(handler);
  return out;
}

// Sleeps `duration` unless the call is cancelled first (tasks/cancel); false when it was.
bool work(ToolContext& ctx, std::chrono::milliseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
    if (ctx.cancel.cancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return !ctx.cancel.cancelled();
}

const json& responsesOf(const ToolContext& ctx) {
  static const json kNone = json::object();
  return ctx.inputs != nullptr ? ctx.inputs->responses : kNone;
}

// responses[key].content[field] as text ("true"/"false" for a boolean), or `fallback`.
std::string answer(const json& responses, const std::string& key, const std::string& field,
                   const std::string& fallback = "none") {
  const json content = responses.value(key, json::object()).value("content", json::object());
  if (!content.is_object() || !content.contains(field)) return fallback;
  const json& value = content[field];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

ToolResult slowCompute(const json& arguments, ToolContext& ctx) {
  const double seconds = arguments.value("seconds", 1.0);
  const std::string label = arguments.value("label", std::string("compute"));
  if (!work(ctx, std::chrono::milliseconds(static_cast<long>(seconds * 1000)))) {
    return ToolResult::failure("slow_compute " + label + " was cancelled");
  }
  return text("slow_compute " + label + " finished after " + std::to_string(seconds) + " s");
}

ToolResult confirmDelete(const json& arguments, ToolContext& ctx) {
  const std::string file = arguments.value("filename", std::string("file.txt"));
  const json& responses = responsesOf(ctx);
  if (!responses.contains("confirm_delete")) {
    if (!work(ctx, kPastInlineWait)) return ToolResult::failure("cancelled");
    return ToolResult::inputRequired(
        {{"confirm_delete", elicitRequest("Delete " + file + "?", "confirm", "boolean")}});
  }
  const bool accepted = responses["confirm_delete"].value("action", "") == "accept";
  return text(accepted ? "Deleted " + file : "Kept " + file);
}

ToolResult multiInput(const json&, ToolContext& ctx) {
  const json& responses = responsesOf(ctx);
  if (responses.contains("name") && responses.contains("confirm")) {
    return text("name=" + answer(responses, "name", "name") +
                ", confirm=" + answer(responses, "confirm", "confirm"));
  }
  if (!work(ctx, kPastInlineWait)) return ToolResult::failure("cancelled");
  return ToolResult::inputRequired({{"name", elicitRequest("What is your name?", "name", "string")},
                                    {"confirm", elicitRequest("Go ahead?", "confirm", "boolean")}});
}

// Asks at once (an input-required result, no task yet); with the answer it runs as a task.
ToolResult toolWithTask(const json&, ToolContext& ctx) {
  const json& responses = responsesOf(ctx);
  if (!responses.contains("user_name")) {
    return ToolResult::inputRequired(
        {{"user_name", elicitRequest("What is your name?", "name", "string")}});
  }
  return text("Hello, " + answer(responses, "user_name", "name", "unknown") + ", from a task!");
}

}  // namespace

void registerTaskTools(tools::ToolRegistry& registry) {
  registry.add(tool("greet", "Greets by name; never a task", TaskSupport::kForbidden,
                    {{"name", {{"type", "string"}}}}, [](const json& arguments, ToolContext&) {
                      return text("Hello, " + arguments.value("name", std::string("World")) + "!");
                    }));
  registry.add(
      tool("slow_compute", "Works for `seconds` seconds, then answers", TaskSupport::kOptional,
           {{"seconds", {{"type", "number"}, {"minimum", 0}}}, {"label", {{"type", "string"}}}},
           slowCompute));
  registry.add(tool("failing_job", "Reports a tool error after about a second",
                    TaskSupport::kRequired, json::object(), [](const json&, ToolContext& ctx) {
                      (void)work(ctx, std::chrono::milliseconds(1000));
                      return ToolResult::failure("failing_job failed, as it always does");
                    }));
  registry.add(tool("protocol_error_job",
                    "Fails inside the server (an unexpected exception) after a moment",
                    TaskSupport::kOptional, json::object(), [](const json&, ToolContext& ctx) {
                      (void)work(ctx, kPastInlineWait);
                      throw std::runtime_error("protocol_error_job crashed, as it always does");
                      return ToolResult{};
                    }));
  registry.add(tool("confirm_delete", "Asks the client to confirm, then deletes (nothing)",
                    TaskSupport::kOptional, {{"filename", {{"type", "string"}}}}, confirmDelete));
  registry.add(tool("multi_input", "Asks the client two questions at once", TaskSupport::kOptional,
                    json::object(), multiInput));
  registry.add(tool("test_tool_with_task", "Asks for a name (MRTR), then greets from a task",
                    TaskSupport::kRequired, json::object(), toolWithTask));
}

}  // namespace conformance
