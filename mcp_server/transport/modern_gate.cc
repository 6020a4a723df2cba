#include "transport/modern_gate.h"

#include "common/base64.h"
#include "jsonrpc/dispatcher.h"
#include "jsonrpc/protocol_era.h"

namespace transport {
namespace {

using mcp::era::isSingleRequest;
using mcp::era::paramsOf;
using nlohmann::json;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

ModernRefusal mismatch(const json& id, const std::string& why) {
  return {400, jsonrpc::makeError(id, mcp::era::kHeaderMismatch, "Header mismatch: " + why)};
}

// The body value Mcp-Name must carry for `method`, or nullopt when the method has none.
std::optional<std::string> nameInBody(const std::string& method, const json& params) {
  const bool task_method =
      method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel";
  const char* field = method == "tools/call"       ? "name"
                      : method == "resources/read" ? "uri"
                      : task_method                ? "taskId"  // the tasks extension
                                                   : nullptr;
  if (field == nullptr || !params.is_object()) return std::nullopt;
  const auto value = params.find(field);
  if (value == params.end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

}  // namespace

std::optional<std::string> decodeHeaderValue(std::string_view value) {
  value = trim(value);
  constexpr std::string_view kPrefix = "=?base64?";
  constexpr std::string_view kSuffix = "?=";
  if (value.size() < kPrefix.size() + kSuffix.size() || !value.starts_with(kPrefix) ||
      !value.ends_with(kSuffix)) {
    return std::string(value);  // a literal value
  }
  const std::string_view encoded =
      value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size());
  // Whole base64 only: unpadded or stray characters are refused, not guessed at.
  if (encoded.find_first_of(" \t\r\n") != std::string_view::npos || encoded.size() % 4 != 0) {
    return std::nullopt;
  }
  return common::base64Decode(encoded);
}

unsigned modernAnswerStatus(const json& answer) {
  if (!answer.is_object()) return 200;
  const auto error = answer.find("error");
  if (error == answer.end() || !error->is_object()) return 200;
  const json code = error->value("code", json());
  if (!code.is_number_integer()) return 200;
  switch (code.get<int>()) {
    case jsonrpc::kMethodNotFound:
      return 404;
    case mcp::era::kHeaderMismatch:
    case mcp::era::kMissingRequiredClientCapability:
    case mcp::era::kUnsupportedProtocolVersion:
      return 400;
    default:
      return 200;
  }
}

bool isModernRequest(const json& message, const ModernHeaders& headers) {
  if (!isSingleRequest(message)) return false;
  // An initialize naming the new version in its header only is still a 2025 handshake.
  return mcp::era::isModern(paramsOf(message)) ||
         (trim(headers.protocol_version) == mcp::era::kModernVersion &&
          message["method"] != "initialize");
}

std::optional<ModernRefusal> refuseModernRequest(const json& message, const ModernHeaders& headers,
                                                 const ParamHeaders& param_headers,
                                                 const ParamHeaders::HeaderLookup& find) {
  const json& id = message.at("id");
  const std::string& method = message.at("method").get_ref<const std::string&>();
  const json& params = paramsOf(message);
  if (!mcp::era::isModern(params)) {
    return ModernRefusal{400,
                         jsonrpc::makeError(id, jsonrpc::kInvalidParams,
                                            std::string("MCP-Protocol-Version names 2026-07-28, so "
                                                        "params._meta must carry \"") +
                                                mcp::era::kProtocolVersionKey + "\" and \"" +
                                                mcp::era::kClientCapabilitiesKey + "\"")};
  }
  if (auto refused = mcp::era::envelopeRefusal(message)) return ModernRefusal{400, *refused};
  const std::string version = mcp::era::requestVersion(params);
  const std::string_view header_version = trim(headers.protocol_version);
  if (!header_version.empty() && header_version != version) {
    return mismatch(id, "MCP-Protocol-Version header '" + std::string(header_version) +
                            "' does not match params._meta version '" + version + "'");
  }
  const std::string_view header_method = trim(headers.method);
  if (!header_method.empty() && header_method != method) {
    return mismatch(id, "Mcp-Method header '" + std::string(header_method) +
                            "' does not match the body's method '" + method + "'");
  }
  if (auto refused = mcp::era::versionRefusal(message)) return ModernRefusal{400, *refused};
  if (header_version.empty()) {
    return mismatch(id, "a 2026-07-28 request must send the MCP-Protocol-Version header");
  }
  if (header_method.empty()) {
    return mismatch(id, "a 2026-07-28 request must send the Mcp-Method header");
  }
  if (const auto expected = nameInBody(method, params)) {
    if (trim(headers.name).empty()) {
      return mismatch(
          id, "a " + method + " request must send the Mcp-Name header ('" + *expected + "')");
    }
    const auto sent = decodeHeaderValue(headers.name);
    if (!sent) return mismatch(id, "the Mcp-Name header is not valid =?base64?...?= text");
    if (*sent != *expected) {
      return mismatch(
          id, "Mcp-Name header '" + *sent + "' does not match the body's '" + *expected + "'");
    }
  }
  if (method == "tools/call") {
    const ParamHeaders::HeaderLookup none = [](const std::string&) {
      return std::optional<std::string_view>();
    };
    if (auto why = param_headers.disagreement(params, find ? find : none)) {
      return mismatch(id, *why);
    }
  }
  if (auto refused = mcp::era::methodRefusal(message)) return ModernRefusal{404, *refused};
  return std::nullopt;
}

}  // namespace transport
