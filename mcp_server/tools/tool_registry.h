// The set of tools a server offers. Register everything before serving; afterwards it is
// read-only and safe to use from any thread.
#pragma once

#include <string>
#include <vector>

#include "tools/tool.h"

namespace tools {

class ToolRegistry {
 public:
  // Throws std::logic_error when a tool of that name is registered already.
  void add(Tool tool);

  // The tools/list result: {"tools": [...]}.
  [[nodiscard]] json list() const;

  // The tool called `name`, or nullptr.
  [[nodiscard]] const Tool* find(const std::string& name) const;
  // Every tool's name, in registration order, comma-separated (for "unknown tool" messages).
  [[nodiscard]] std::string names() const;

 private:
  std::vector<Tool> tools_;
};

// Runs `tool`: arguments that do not match its input schema, a sandbox::SandboxError and any
// other exception from the handler become failures (isError) the model can act on. Never throws.
[[nodiscard]] ToolResult callTool(const Tool& tool, const json& arguments, ToolContext& ctx);

}  // namespace tools
