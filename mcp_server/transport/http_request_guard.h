// Header checks every Streamable HTTP request passes before its body is read or dispatched:
// Host (DNS rebinding), Origin, bearer token, path, method, Content-Type, Accept and
// MCP-Protocol-Version. Pure; thread-safe.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jsonrpc/endpoint.h"

namespace transport {

// A bearer token of the tokens file and the principal it authenticates.
struct PrincipalToken {
  std::string name;
  std::string token;
};

struct RequestGuardConfig {
  std::string path = "/mcp";
  std::string token;  // principal "default"; with principal_tokens empty too: none required
  std::vector<PrincipalToken> principal_tokens;
  std::vector<std::string> allowed_origins;
  bool require_loopback_host = true;  // set when bound to a loopback address
  // preview.domain while previews are on: a Host or Origin under it is a preview page (sandbox
  // content in the user's browser) and never reaches the MCP endpoint, whatever the allowlist.
  std::string preview_domain;
  std::vector<std::string> get_paths;  // plain GET/HEAD endpoints (health, metrics) beside `path`
};

// Why a request is refused; the connection turns it into an HTTP response with a JSON-RPC
// error body.
struct Rejection {
  boost::beast::http::status status;
  int code;                                                  // JSON-RPC error code for the body
  std::string message;                                       // says what to do next
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. WWW-Authenticate, Allow
};

// MCP protocol versions accepted in the MCP-Protocol-Version header, newest first.
[[nodiscard]] const std::vector<std::string>& supportedProtocolVersions();

// True when the request goes to one of config.get_paths (after checkRequest let it through).
[[nodiscard]] bool isPlainGet(const boost::beast::http::request_header<>& request,
                              const RequestGuardConfig& config);

// The principal the request's Authorization names: "local" when no token is configured, nullopt
// when tokens are configured and none matches (checkRequest refuses it then).
[[nodiscard]] std::optional<jsonrpc::Principal> authenticate(
    const boost::beast::http::request_header<>& request, const RequestGuardConfig& config);

// An MCP-Protocol-Version header naming a version this server does not speak. checkRequest()
// applies it to DELETE only: a POST's version is judged with its body (2026-07-28 requests by
// modern_gate.h, which answers -32022; others with this, echoing the request's id).
[[nodiscard]] std::optional<Rejection> unsupportedVersion(
    const boost::beast::http::request_header<>& request);

[[nodiscard]] std::optional<Rejection> checkRequest(
    const boost::beast::http::request_header<>& request, const RequestGuardConfig& config);

}  // namespace transport
