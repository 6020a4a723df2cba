#include "sidecar/mcp_body_check.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/json_limits.h"
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

McpBodyCheck refuse(std::string reason, const std::string& rule_id, json error_response,
                    unsigned http_status = 403) {
  McpBodyCheck result;
  result.http_status = http_status;
  result.decision.verdict = policy::Verdict::kDeny;
  result.decision.reason = std::move(reason);
  result.decision.rule_id = rule_id;
  result.error_response = std::move(error_response);
  return result;
}

McpBodyCheck refuseUnreadable(std::string reason, const std::string& rule_id,
                              const std::string& answer) {
  return refuse(std::move(reason), rule_id, rpcError(nullptr, kJsonRpcParseError, answer), 400);
}

std::string asciiLowered(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

// Parses the body, noting the first key that appears twice in one object. The text is at most
// kMaxJsonDepth deep (checked before), so the stack of key sets is small.
struct StrictParse {
  json message;
  std::string duplicate_key;
};

StrictParse parseStrict(std::string_view body) {
  StrictParse out;
  std::vector<std::unordered_set<std::string>> open_objects;
  const json::parser_callback_t note_keys = [&](int /*depth*/, json::parse_event_t event,
                                                json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        // Keys are compared ignoring ASCII case: decoders that match keys that way (Go's
        // encoding/json) would read "Name" and "name" as one member, and take the last.
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(asciiLowered(parsed.get<std::string>())).second &&
            out.duplicate_key.empty()) {
          out.duplicate_key = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  out.message = json::parse(body, note_keys, /*allow_exceptions=*/false);
  return out;
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
    return refuseUnreadable("request body has Content-Encoding '" + std::string(content_encoding) +
                                "'; the sidecar checks MCP calls and needs an uncompressed body",
                            rule.id, "send the body uncompressed");
  }
  if (body.empty()) {
    McpBodyCheck result;
    result.decision = {policy::Verdict::kAllow, "empty body carries no MCP call", rule.id};
    return result;
  }
  if (common::findExcessNesting(body) != std::string_view::npos) {
    const std::string limit = std::to_string(common::kMaxJsonDepth);
    return refuseUnreadable(
        "request body nests JSON deeper than " + limit + " levels", rule.id,
        "Parse error: JSON nested deeper than " + limit + " levels; send a flatter message");
  }
  StrictParse parsed = parseStrict(body);
  const json& message = parsed.message;
  if (message.is_discarded()) {
    return refuseUnreadable("request body is not valid JSON; the entry restricts MCP calls",
                            rule.id, "Parse error: the sidecar could not read the JSON-RPC body");
  }
  if (!parsed.duplicate_key.empty()) {
    const std::string reason = "request body repeats the key \"" + parsed.duplicate_key +
                               "\" in one object (keys compare ignoring case); upstreams may read "
                               "the other value than the policy check did";
    return refuse(reason, rule.id,
                  rpcError(idOf(message), kJsonRpcInvalidRequest,
                           "Invalid Request: " + reason + "; send each key once"),
                  400);
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
