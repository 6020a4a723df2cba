// Tool arguments that MCP 2026-07-28 clients also send as headers: a property of a tool's
// inputSchema marked "x-mcp-header": "Session-Id" travels as Mcp-Param-Session-Id too, so that a
// front can route the call (to the replica holding that session) without reading the body. The
// server acts on the body, so a header that disagrees with it, or is missing while the body has
// the value, or is sent while the body has none, refuses the request (400, -32020): otherwise a
// front could send a call to one replica while it names another's session. Pure; thread-safe.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace transport {

class ParamHeaders {
 public:
  // A request header by name (case-insensitive), or nullopt when the request has none.
  using HeaderLookup = std::function<std::optional<std::string_view>(const std::string& name)>;

  ParamHeaders() = default;
  // Reads every tool's marked properties from a tools/list result (properties reached through a
  // chain of "properties" keys, as the spec allows).
  [[nodiscard]] static ParamHeaders fromToolsList(const nlohmann::json& tools_list);

  // Why the tools/call `params` and the request's Mcp-Param-* headers disagree, or nullopt.
  [[nodiscard]] std::optional<std::string> disagreement(const nlohmann::json& params,
                                                        const HeaderLookup& header) const;

  // The header names (Mcp-Param-...) of `tool`'s marked properties, in schema order.
  [[nodiscard]] std::vector<std::string> headersOf(const std::string& tool) const;

 private:
  struct Marked {
    std::vector<std::string> path;  // property names from the arguments object down
    std::string header;             // "Mcp-Param-" + the x-mcp-header value
  };
  std::map<std::string, std::vector<Marked>> by_tool_;
};

}  // namespace transport
