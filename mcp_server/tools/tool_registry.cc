#include "tools/tool_registry.h"

#include <spdlog/spdlog.h>

#include "jsonrpc/errors.h"
#include "sandbox/backend.h"
#include "tools/schema_validator.h"

namespace tools {

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

json ToolRegistry::list() const {
  json tools = json::array();
  for (const auto& tool : tools_) {
    json entry{{"name", tool.spec.name},
               {"title", tool.spec.title},
               {"description", tool.spec.description},
               {"inputSchema", tool.spec.input_schema},
               {"outputSchema", tool.spec.output_schema}};
    if (!tool.spec.annotations.empty()) entry["annotations"] = tool.spec.annotations;
    entry["execution"] = {{"taskSupport", tool.spec.task_support == TaskSupport::kOptional
                                              ? "optional"
                                              : "forbidden"}};
    tools.push_back(std::move(entry));
  }
  return json{{"tools", std::move(tools)}};
}

json ToolRegistry::call(const std::string& name, const json& arguments, ToolContext& ctx) const {
  const Tool* tool = find(name);
  if (tool == nullptr) {
    std::string known;
    for (const auto& t : tools_) known += (known.empty() ? "" : ", ") + t.spec.name;
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "Unknown tool: " + name + " (available: " + known + ")");
  }
  // Argument errors are tool results (MCP 2025-11-25) so the model can correct itself.
  if (auto problem = validateAgainstSchema(arguments, tool->spec.input_schema, "arguments")) {
    return toCallResult(ToolResult::failure("Invalid arguments for " + name + ": " + *problem));
  }
  try {
    return toCallResult(tool->handler(arguments, ctx));
  } catch (const sandbox::SandboxError& e) {
    return toCallResult(ToolResult::failure(e.what()));
  } catch (const std::exception& e) {
    spdlog::error("tool {} failed unexpectedly: {}", name, e.what());
    return toCallResult(ToolResult::failure(std::string("Internal error in ") + name + ": " +
                                            e.what() +
                                            ". The server is still running; retry "
                                            "or report this message."));
  }
}

json toCallResult(ToolResult result) {
  // Moved, not copied: a result may hold a whole file.
  json content = json::array({{{"type", "text"}, {"text", std::move(result.text)}}});
  for (auto& block : result.extra_content) content.push_back(std::move(block));
  json out{{"content", std::move(content)}, {"isError", result.is_error}};
  if (!result.is_error) out["structuredContent"] = std::move(result.structured);
  if (!result.meta.empty()) out["_meta"] = std::move(result.meta);
  return out;
}

}  // namespace tools
