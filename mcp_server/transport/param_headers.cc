#include "transport/param_headers.h"

#include <charconv>
#include <cmath>

#include "transport/modern_gate.h"

namespace transport {
namespace {

using nlohmann::json;

void collect(const json& schema, std::vector<std::string>& path,
             std::vector<std::string>& headers_out, std::vector<std::vector<std::string>>& paths) {
  const auto properties = schema.find("properties");
  if (properties == schema.end() || !properties->is_object()) return;
  for (const auto& [name, property] : properties->items()) {
    if (!property.is_object()) continue;
    path.push_back(name);
    if (const auto marked = property.find("x-mcp-header");
        marked != property.end() && marked->is_string() && !marked->get<std::string>().empty()) {
      headers_out.push_back("Mcp-Param-" + marked->get<std::string>());
      paths.push_back(path);
    }
    collect(property, path, headers_out, paths);
    path.pop_back();
  }
}

// The value at `path` under `arguments`, or null.
json valueAt(const json& arguments, const std::vector<std::string>& path) {
  const json* at = &arguments;
  for (const auto& key : path) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return *at;
}

// Whether the decoded header text carries the body's value (integers compare as numbers).
bool carries(const std::string& text, const json& value) {
  if (value.is_string()) return text == value.get_ref<const std::string&>();
  if (value.is_boolean()) return text == (value.get<bool>() ? "true" : "false");
  if (value.is_number_integer() || value.is_number_unsigned()) {
    double parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    return ec == std::errc() && end == text.data() + text.size() && parsed == value.get<double>();
  }
  return false;  // numbers with fractions, objects, arrays: never marked
}

}  // namespace

ParamHeaders ParamHeaders::fromToolsList(const json& tools_list) {
  ParamHeaders out;
  const auto tools = tools_list.find("tools");
  if (tools == tools_list.end() || !tools->is_array()) return out;
  for (const auto& tool : *tools) {
    if (!tool.is_object() || !tool.contains("name") || !tool.contains("inputSchema")) continue;
    std::vector<std::string> path;
    std::vector<std::string> headers;
    std::vector<std::vector<std::string>> paths;
    collect(tool["inputSchema"], path, headers, paths);
    auto& marked = out.by_tool_[tool["name"].get<std::string>()];
    for (std::size_t i = 0; i < headers.size(); ++i) marked.push_back({paths[i], headers[i]});
  }
  return out;
}

std::vector<std::string> ParamHeaders::headersOf(const std::string& tool) const {
  std::vector<std::string> out;
  if (const auto it = by_tool_.find(tool); it != by_tool_.end()) {
    for (const auto& marked : it->second) out.push_back(marked.header);
  }
  return out;
}

std::optional<std::string> ParamHeaders::disagreement(const json& params,
                                                      const HeaderLookup& header) const {
  if (!params.is_object()) return std::nullopt;
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) return std::nullopt;
  const auto tool = by_tool_.find(name->get<std::string>());
  if (tool == by_tool_.end()) return std::nullopt;
  static const json kNoArguments = json::object();
  const auto given = params.find("arguments");
  const json& arguments = given != params.end() ? *given : kNoArguments;
  for (const auto& marked : tool->second) {
    const json value = valueAt(arguments, marked.path);
    const auto sent = header(marked.header);
    if (value.is_null()) {
      if (sent) {
        return marked.header + " header is sent, but the arguments have no " + marked.path.back();
      }
      continue;
    }
    if (!sent) {
      return "the arguments carry " + marked.path.back() + ", so the " + marked.header +
             " header must carry it too";
    }
    const auto text = decodeHeaderValue(*sent);
    if (!text) return "the " + marked.header + " header is not valid =?base64?...?= text";
    if (!carries(*text, value)) {
      return marked.header + " header '" + *text + "' does not match the arguments' " +
             marked.path.back() + " " + value.dump();
    }
  }
  return std::nullopt;
}

}  // namespace transport
