#include "tools/tool_registry.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "sandbox/backend.h"
#include "tools/schema_validator.h"
#include "tools/tool_metrics.h"

namespace tools {
namespace {

const char* taskSupportName(TaskSupport support) {
  switch (support) {
    case TaskSupport::kOptional:
      return "optional";
    case TaskSupport::kRequired:
      return "required";
    case TaskSupport::kForbidden:
      break;
  }
  return "forbidden";
}

}  // namespace

void ToolRegistry::add(Tool tool) {
  if (find(tool.spec.name) != nullptr) {
    throw std::logic_error("tool registered twice: " + tool.spec.name);
  }
  tools_.push_back(std::move(tool));
}

const Tool* ToolRegistry::find(const std::string& name) const {
  for (const auto& tool : tools_) {
    if (tool.spec.name == name) return &tool;
  }
  return nullptr;
}

std::string ToolRegistry::names() const {
  std::string known;
  for (const auto& t : tools_) known += (known.empty() ? "" : ", ") + t.spec.name;
  return known;
}

json ToolRegistry::list() const {
  json tools = json::array();
  for (const auto& tool : tools_) {
    json entry{{"name", tool.spec.name},
               {"title", tool.spec.title},
               {"description", tool.spec.description},
               {"inputSchema", tool.spec.input_schema}};
    if (!tool.spec.output_schema.is_null()) entry["outputSchema"] = tool.spec.output_schema;
    if (!tool.spec.annotations.empty()) entry["annotations"] = tool.spec.annotations;
    entry["execution"] = {{"taskSupport", taskSupportName(tool.spec.task_support)}};
    tools.push_back(std::move(entry));
  }
  return json{{"tools", std::move(tools)}};
}

namespace {

ToolResult callUncounted(const Tool& tool, const json& arguments, ToolContext& ctx) {
  const std::string& name = tool.spec.name;
  // Argument errors are tool results (MCP 2025-11-25) so the model can correct itself.
  if (auto problem = validateAgainstSchema(arguments, tool.spec.input_schema, "arguments")) {
    return ToolResult::failure("Invalid arguments for " + name + ": " + *problem);
  }
  try {
    return tool.handler(arguments, ctx);
  } catch (const sandbox::SandboxError& e) {
    return ToolResult::failure(e.what());
  } catch (const std::exception& e) {
    spdlog::error("tool {} failed unexpectedly: {}", name, e.what());
    ToolResult result =
        ToolResult::failure(std::string("Internal error in ") + name + ": " + e.what() +
                            ". The server is still running; retry or report this message.");
    result.internal_error = true;
    return result;
  }
}

}  // namespace

ToolResult callTool(const Tool& tool, const json& arguments, ToolContext& ctx) {
  const auto started = std::chrono::steady_clock::now();
  ToolResult result = callUncounted(tool, arguments, ctx);
  if (ctx.metrics != nullptr) {
    ctx.metrics->record(
        tool.spec.name, result,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return result;
}

}  // namespace tools
