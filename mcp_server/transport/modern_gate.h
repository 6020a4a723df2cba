// Streamable HTTP's part of MCP 2026-07-28 for a request that carries no Mcp-Session-Id: whether
// it is a stateless (modern) request, and if it cannot be served, the HTTP status and JSON-RPC
// error that say why: its headers must agree with its body (MCP-Protocol-Version with
// params._meta, Mcp-Method with the method, Mcp-Name with the tool name or resource URI, in the
// =?base64?...?= form when encoded; Mcp-Param-* with the arguments a tool marks: param_headers.h),
// else 400 and -32020; a malformed _meta is 400 and -32602,
// another version 400 and -32022, a method the revision does not have 404 and -32601. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "transport/param_headers.h"

namespace transport {

struct ModernHeaders {
  std::string_view protocol_version;  // MCP-Protocol-Version; empty when absent
  std::string_view method;            // Mcp-Method
  std::string_view name;              // Mcp-Name
};

struct ModernRefusal {
  unsigned status = 400;
  nlohmann::json body;  // a JSON-RPC error response naming the request's id
};

// A single request (not a notification, not a batch) served statelessly: its params._meta names
// a protocol version, or (malformed) only its MCP-Protocol-Version header names 2026-07-28.
[[nodiscard]] bool isModernRequest(const nlohmann::json& message, const ModernHeaders& headers);

// Why a modern request cannot be served, or nullopt: serve it. A tools/call's Mcp-Param-*
// headers (found with `find`; empty: none are sent) are checked against its arguments for the
// tools `params` marks.
[[nodiscard]] std::optional<ModernRefusal> refuseModernRequest(
    const nlohmann::json& message, const ModernHeaders& headers,
    const ParamHeaders& params = ParamHeaders(), const ParamHeaders::HeaderLookup& find = {});

// The HTTP status of a served modern request's answer: 404 for -32601 (a method this server
// lacks), 400 for -32020/-32021/-32022 (e.g. a tool that needs a client capability the request
// did not declare), else 200 (results, and handler errors such as an unknown tool, in-band).
[[nodiscard]] unsigned modernAnswerStatus(const nlohmann::json& answer);

// An Mcp-Name / Mcp-Param-* value as sent: trimmed, and decoded when it is =?base64?...?=.
// nullopt: the encoded form is not valid base64 or not UTF-8-safe to compare.
[[nodiscard]] std::optional<std::string> decodeHeaderValue(std::string_view value);

}  // namespace transport
