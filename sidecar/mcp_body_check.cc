#include "sidecar/mcp_body_check.h"

#include <algorithm>
#include <string>

#include "sidecar/header_filter.h"

namespace sidecar {
namespace {

using json = nlohmann::json;

json rpcError(const json& id, int code, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

bool allowsMethod(const policy::Rule& rule, std::string_view method) {
  return rule.methods.empty() ||
         std::find(rule.methods.begin(), rule.methods.end(), method) != rule.methods.end();
}

// The error code for a refused message: a tools/call whose method is allowed was refused for its
// tool; anything else for its method.
int refusalCode(const policy::Rule& rule, const json& message) {
  const auto method =
      message.is_object() && message.contains("method") && message["method"].is_string()
          ? message["method"].get<std::string>()
          : std::string();
  if (method == "tools/call" && allowsMethod(rule, method)) return kJsonRpcInvalidParams;
  return kJsonRpcMethodNotFound;
}

json idOf(const json& message) {
  return message.is_object() && message.contains("id") ? message["id"] : json(nullptr);
}

bool isRequest(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id");
}

McpBodyCheck refuse(std::string reason, const std::string& rule_id, json error_response) {
  McpBodyCheck result;
  result.decision.verdict = policy::Verdict::kDeny;
  result.decision.reason = std::move(reason);
  result.decision.rule_id = rule_id;
  result.error_response = std::move(error_response);
  return result;
}

json batchErrors(const policy::Rule& rule, const json& batch) {
  json errors = json::array();
  for (const auto& message : batch) {
    if (!isRequest(message)) continue;  // notifications and responses get no answer
    const auto own = policy::decideMcpCall(rule, message);
    if (own.allowed()) {
      errors.push_back(rpcError(idOf(message), kJsonRpcMethodNotFound,
                                "not forwarded: another call in this batch was refused by the "
                                "sandbox network policy; send the allowed calls on their own"));
    } else {
      errors.push_back(rpcError(idOf(message), refusalCode(rule, message),
                                "refused by the sandbox network policy: " + own.reason));
    }
  }
  return errors;
}

}  // namespace

bool ruleRestrictsMcp(const policy::Rule& rule) noexcept {
  return !rule.methods.empty() || !rule.tools.empty();
}

McpBodyCheck checkMcpBody(const policy::Rule& rule, std::string_view body,
                          std::string_view content_encoding) {
  if (!content_encoding.empty() && !iequals(content_encoding, "identity")) {
    return refuse("request body has Content-Encoding '" + std::string(content_encoding) +
                      "'; the sidecar checks MCP calls and needs an uncompressed body",
                  rule.id, rpcError(nullptr, kJsonRpcParseError, "send the body uncompressed"));
  }
  if (body.empty()) {
    McpBodyCheck result;
    result.decision = {policy::Verdict::kAllow, "empty body carries no MCP call", rule.id};
    return result;
  }
  const json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    return refuse("request body is not valid JSON; the entry restricts MCP calls", rule.id,
                  rpcError(nullptr, kJsonRpcParseError,
                           "Parse error: the sidecar could not read the JSON-RPC body"));
  }
  McpBodyCheck result;
  result.decision = policy::decideMcpCall(rule, message);
  if (result.decision.allowed()) return result;
  if (message.is_array()) {
    result.error_response = batchErrors(rule, message);
    if (result.error_response->empty()) {  // only notifications: still tell the client why
      result.error_response =
          rpcError(nullptr, kJsonRpcMethodNotFound,
                   "refused by the sandbox network policy: " + result.decision.reason);
    }
  } else {
    result.error_response =
        rpcError(idOf(message), refusalCode(rule, message),
                 "refused by the sandbox network policy: " + result.decision.reason);
  }
  return result;
}

}  // namespace sidecar
