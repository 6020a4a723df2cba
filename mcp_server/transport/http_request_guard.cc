#include "transport/http_request_guard.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common/text.h"
#include "transport/bearer_auth.h"
#include "transport/origin_check.h"

namespace transport {
namespace http = boost::beast::http;
namespace {

constexpr int kServerError = -32000;

using common::iequals;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// "application/json; charset=utf-8" -> "application/json".
std::string_view mediaType(std::string_view value) {
  return trim(value.substr(0, value.find(';')));
}

// True when the Accept header lists a media range covering JSON or an event stream.
bool acceptsJsonOrEventStream(std::string_view accept) {
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    const std::string_view range = mediaType(accept.substr(0, comma));
    for (const std::string_view ok :
         {"application/json", "text/event-stream", "*/*", "application/*", "text/*"}) {
      if (iequals(range, ok)) return true;
    }
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view targetPath(std::string_view target) { return target.substr(0, target.find('?')); }

Rejection reject(http::status status, std::string message) {
  return Rejection{status, kServerError, std::move(message), {}};
}

std::optional<Rejection> checkOriginAndHost(const http::request_header<>& request,
                                            const RequestGuardConfig& config) {
  const auto host = request.find(http::field::host);
  const auto origin = request.find(http::field::origin);
  if (!config.preview_domain.empty()) {
    for (const auto& field : {host, origin}) {
      if (field != request.end() &&
          subdomainLabel(std::string_view(field->value()), config.preview_domain)) {
        // The value is not echoed: a preview host holds a label, which is a capability (and
        // this message is logged).
        return reject(http::status::forbidden,
                      std::string("Forbidden: the request's ") +
                          (field == host ? "Host" : "Origin") +
                          " is a preview address (under preview.domain " + config.preview_domain +
                          "); pages served from a sandbox may not call the MCP endpoint");
      }
    }
  }
  if (config.require_loopback_host && host != request.end() &&
      !isLoopbackHostHeader(std::string_view(host->value()))) {
    return reject(http::status::forbidden,
                  "Forbidden: Host header is not a loopback name; this server is bound to "
                  "loopback, so connect via localhost, 127.0.0.1 or [::1]");
  }
  if (origin != request.end() &&
      !isOriginAllowed(std::string_view(origin->value()), config.allowed_origins)) {
    return reject(http::status::forbidden,
                  "Forbidden: Origin '" + std::string(origin->value()) +
                      "' is not allowed; add it to http.allowed_origins to permit it");
  }
  return std::nullopt;
}

std::optional<Rejection> checkAuthorization(const http::request_header<>& request,
                                            const RequestGuardConfig& config) {
  if (authenticate(request, config)) return std::nullopt;
  Rejection rejection = reject(http::status::unauthorized,
                               "Unauthorized: send 'Authorization: Bearer <token>' with the "
                               "token this server was started with");
  rejection.headers.emplace_back("WWW-Authenticate", "Bearer");
  return rejection;
}

std::optional<Rejection> checkPostHeaders(const http::request_header<>& request) {
  const auto content_type = request.find(http::field::content_type);
  if (content_type == request.end() ||
      !iequals(mediaType(std::string_view(content_type->value())), "application/json")) {
    return reject(http::status::unsupported_media_type,
                  "Unsupported Media Type: POST bodies must be JSON-RPC with "
                  "'Content-Type: application/json'");
  }
  const auto accept = request.find(http::field::accept);
  if (accept != request.end() && !acceptsJsonOrEventStream(std::string_view(accept->value()))) {
    return reject(http::status::not_acceptable,
                  "Not Acceptable: send 'Accept: application/json, text/event-stream'");
  }
  return std::nullopt;
}

}  // namespace

std::optional<jsonrpc::Principal> authenticate(const http::request_header<>& request,
                                               const RequestGuardConfig& config) {
  if (config.token.empty() && config.principal_tokens.empty()) return jsonrpc::Principal{};
  const auto auth = request.find(http::field::authorization);
  if (auth == request.end()) return std::nullopt;
  const std::string_view authorization(auth->value());
  // Every token is compared, in time independent of where a match is: the answer's timing says
  // nothing of which principal's token came close.
  std::optional<jsonrpc::Principal> found;
  for (const auto& entry : config.principal_tokens) {
    if (isBearerAuthorized(authorization, entry.token) && !found) {
      found = jsonrpc::Principal{entry.name, true};
    }
  }
  if (isBearerAuthorized(authorization, config.token) && !found) {
    found = jsonrpc::Principal{jsonrpc::Principal::kDefault, false};
  }
  return found;
}

bool isPlainGet(const http::request_header<>& request, const RequestGuardConfig& config) {
  const std::string_view path = targetPath(std::string_view(request.target()));
  return (request.method() == http::verb::get || request.method() == http::verb::head) &&
         std::find(config.get_paths.begin(), config.get_paths.end(), path) !=
             config.get_paths.end();
}

const std::vector<std::string>& supportedProtocolVersions() {
  // 2026-07-28 requests are checked against their body (transport/modern_gate.h).
  static const std::vector<std::string> versions{"2026-07-28", "2025-11-25", "2025-06-18",
                                                 "2025-03-26"};
  return versions;
}

std::optional<Rejection> checkRequest(const http::request_header<>& request,
                                      const RequestGuardConfig& config) {
  if (auto rejection = checkOriginAndHost(request, config)) return rejection;
  if (auto rejection = checkAuthorization(request, config)) return rejection;
  const std::string_view path = targetPath(std::string_view(request.target()));
  if (std::find(config.get_paths.begin(), config.get_paths.end(), path) != config.get_paths.end()) {
    if (request.method() == http::verb::get || request.method() == http::verb::head) {
      return std::nullopt;
    }
    Rejection rejection =
        reject(http::status::method_not_allowed,
               "Method Not Allowed: " + std::string(path) + " answers GET and HEAD only");
    rejection.headers.emplace_back("Allow", "GET, HEAD");
    return rejection;
  }
  if (path != config.path) {
    return reject(http::status::not_found, "Not Found: the MCP endpoint is " + config.path);
  }
  const http::verb method = request.method();
  if (method != http::verb::post && method != http::verb::delete_) {
    Rejection rejection = reject(http::status::method_not_allowed,
                                 "Method Not Allowed: use POST to send messages and DELETE to "
                                 "end a session; this server offers no standalone SSE stream");
    rejection.headers.emplace_back("Allow", "POST, DELETE");
    return rejection;
  }
  if (method == http::verb::post) {
    if (auto rejection = checkPostHeaders(request)) return rejection;
  }
  // A POST's version is judged with its body (the id to echo; a 2026-07-28 request answers
  // -32022 with the supported versions): unsupportedVersion() after parsing.
  if (method == http::verb::delete_) {
    if (auto rejection = unsupportedVersion(request)) return rejection;
  }
  return std::nullopt;
}

std::optional<Rejection> unsupportedVersion(const http::request_header<>& request) {
  const auto version = request.find("MCP-Protocol-Version");
  if (version == request.end()) return std::nullopt;
  const auto& supported = supportedProtocolVersions();
  if (std::find(supported.begin(), supported.end(), trim(std::string_view(version->value()))) !=
      supported.end()) {
    return std::nullopt;
  }
  return reject(http::status::bad_request,
                "Bad Request: unsupported MCP-Protocol-Version '" + std::string(version->value()) +
                    "'; supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26");
}

}  // namespace transport
