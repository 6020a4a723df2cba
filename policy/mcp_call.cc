// decideMcpCall: checks the JSON-RPC methods (and tools/call tool names) of a request body
// against a rule's lists. A batch is allowed only when every element is.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"

namespace policy {
namespace {

using nlohmann::json;

bool contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string text;
  for (const std::string& item : list) text += (text.empty() ? "" : ", ") + item;
  return text;
}

char asciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return asciiLower(x) == asciiLower(y);
         });
}

// A key of `object` that some JSON decoders (Go's encoding/json) take for one of `names`, since
// they match keys ignoring case, while it is not spelled exactly so: {"Method": ...} is a request
// to such an upstream but a response to this check. Empty when there is none.
std::string caseVariantKey(const json& object, std::initializer_list<std::string_view> names) {
  for (const auto& [key, value] : object.items()) {
    for (const std::string_view name : names) {
      if (key != name && equalsIgnoringCase(key, name)) return key;
    }
  }
  return {};
}

// Empty string when the message is allowed; otherwise why not.
std::string checkMessage(const Rule& rule, const json& message) {
  if (!message.is_object()) return "not a JSON-RPC message object";
  if (const auto variant =
          caseVariantKey(message, {"jsonrpc", "id", "method", "params", "result", "error"});
      !variant.empty()) {
    return "JSON-RPC key '" + variant +
           "' differs from a member name only in case; upstreams that match keys ignoring case "
           "would read it as that member";
  }
  const auto method = message.find("method");
  if (method == message.end()) {
    // A response to a server-initiated request (sampling, elicitation) invokes nothing.
    if (message.contains("id") && (message.contains("result") || message.contains("error"))) {
      return {};
    }
    return "JSON-RPC message has neither 'method' nor 'result'/'error'";
  }
  if (!method->is_string()) return "'method' is not a string";
  const std::string& name = method->get_ref<const std::string&>();
  if (isLifecycleMethod(name)) return {};
  if (!rule.methods.empty() && !contains(rule.methods, name)) {
    return "method '" + name + "' is not allowed by " + rule.id +
           " (allowed: " + joined(rule.methods) + ")";
  }
  if (name != "tools/call" || rule.tools.empty()) return {};
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object() || !params->contains("name") ||
      !(*params)["name"].is_string()) {
    return "tools/call without a string params.name";
  }
  if (const auto variant = caseVariantKey(*params, {"name", "arguments"}); !variant.empty()) {
    return "tools/call params key '" + variant + "' differs from 'name'/'arguments' only in case";
  }
  const std::string& tool = (*params)["name"].get_ref<const std::string&>();
  if (!contains(rule.tools, tool)) {
    return "tool '" + tool + "' is not allowed by " + rule.id + " (allowed: " + joined(rule.tools) +
           ")";
  }
  return {};
}

}  // namespace

bool isLifecycleMethod(std::string_view method) noexcept {
  static constexpr std::array<std::string_view, 4> kLifecycle{
      "initialize", "notifications/initialized", "ping", "notifications/cancelled"};
  return std::find(kLifecycle.begin(), kLifecycle.end(), method) != kLifecycle.end();
}

Decision decideMcpCall(const Rule& rule, const json& body) {
  if (rule.methods.empty() && rule.tools.empty()) {
    return Decision{Verdict::kAllow, rule.id + " does not restrict methods or tools", rule.id};
  }
  if (body.is_object()) {
    std::string why = checkMessage(rule, body);
    if (!why.empty()) return Decision{Verdict::kDeny, std::move(why), rule.id};
    const std::string method = body.contains("method") ? body["method"].get<std::string>() : "";
    return Decision{Verdict::kAllow,
                    (method.empty() ? std::string("response") : "method '" + method + "'") +
                        " allowed by " + rule.id,
                    rule.id};
  }
  if (!body.is_array()) {
    return Decision{Verdict::kDeny, "body is not a JSON-RPC message or batch", rule.id};
  }
  if (body.empty()) return Decision{Verdict::kDeny, "empty JSON-RPC batch", rule.id};
  for (std::size_t i = 0; i < body.size(); ++i) {
    std::string why = checkMessage(rule, body[i]);
    if (!why.empty()) {
      return Decision{Verdict::kDeny, "batch element " + std::to_string(i) + ": " + why, rule.id};
    }
  }
  return Decision{Verdict::kAllow,
                  "all " + std::to_string(body.size()) + " batch elements allowed by " + rule.id,
                  rule.id};
}

}  // namespace policy
