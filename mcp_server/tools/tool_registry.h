// The set of tools a server offers. Register everything before serving; afterwards it is
// read-only and safe to use from any thread.
#pragma once

#include <string>
#include <vector>

#include "tools/tool.h"

namespace tools {

class ToolRegistry {
 public:
  void add(Tool tool);

  // The tools/list result: {"tools": [...]}.
  [[nodiscard]] json list() const;

  // Runs a tool and returns the tools/call result. Throws jsonrpc::Error(-32602) for an unknown
  // tool; invalid arguments and handler failures become results with isError: true.
  [[nodiscard]] json call(const std::string& name, const json& arguments, ToolContext& ctx) const;

  [[nodiscard]] const Tool* find(const std::string& name) const;

 private:
  std::vector<Tool> tools_;
};

// Wire form of a result: content + structuredContent + isError.
[[nodiscard]] json toCallResult(ToolResult result);

}  // namespace tools
