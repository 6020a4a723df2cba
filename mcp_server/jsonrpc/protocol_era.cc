#include "jsonrpc/protocol_era.h"

#include <algorithm>

#include "jsonrpc/dispatcher.h"
#include "jsonrpc/errors.h"

namespace mcp::era {
namespace {

constexpr std::array<std::string_view, 8> kLogLevels{"debug", "info",     "notice", "warning",
                                                     "error", "critical", "alert",  "emergency"};

const json* metaOf(const json& params) {
  if (!params.is_object()) return nullptr;
  const auto meta = params.find("_meta");
  return meta != params.end() && meta->is_object() ? &*meta : nullptr;
}

json invalidParams(const json& id, const std::string& why) {
  return jsonrpc::makeError(id, jsonrpc::kInvalidParams, why);
}

}  // namespace

bool isModern(const json& params) {
  const json* meta = metaOf(params);
  return meta != nullptr && meta->contains(kProtocolVersionKey);
}

int logLevelIndex(std::string_view level) {
  const auto it = std::find(kLogLevels.begin(), kLogLevels.end(), level);
  return it == kLogLevels.end() ? -1 : static_cast<int>(it - kLogLevels.begin());
}

json supportedVersions() { return json::array({std::string(kModernVersion)}); }

bool isSingleRequest(const json& message) {
  return message.is_object() && message.contains("id") && message.contains("method") &&
         message["method"].is_string() &&
         (message["id"].is_string() || message["id"].is_number_integer());
}

const json& paramsOf(const json& message) {
  static const json kNoParams = json::object();
  const auto given = message.find("params");
  return given != message.end() ? *given : kNoParams;
}

std::string requestVersion(const json& params) {
  const json* meta = metaOf(params);
  if (meta == nullptr) return {};
  const auto version = meta->find(kProtocolVersionKey);
  return version != meta->end() && version->is_string() ? version->get<std::string>() : "";
}

std::optional<json> envelopeRefusal(const json& message) {
  const json& params = paramsOf(message);
  const json& id = message.at("id");
  const std::string& method = message.at("method").get_ref<const std::string&>();
  const json* meta = metaOf(params);
  if (meta == nullptr || !meta->contains(kProtocolVersionKey)) {
    if (method != "server/discover") return std::nullopt;  // a 2025 request
    return invalidParams(id, std::string("server/discover needs params._meta with \"") +
                                 kProtocolVersionKey + "\" (e.g. \"2026-07-28\") and \"" +
                                 kClientCapabilitiesKey + "\" (an object, {} for none)");
  }
  if (!meta->at(kProtocolVersionKey).is_string()) {
    return invalidParams(id, std::string("params._meta[\"") + kProtocolVersionKey +
                                 "\"] must be a string such as \"2026-07-28\"");
  }
  const auto capabilities = meta->find(kClientCapabilitiesKey);
  if (capabilities == meta->end() || !capabilities->is_object()) {
    return invalidParams(id, std::string("params._meta[\"") + kClientCapabilitiesKey +
                                 "\"] is required in 2026-07-28 requests: an object, {} when the "
                                 "client declares no capability");
  }
  return std::nullopt;
}

std::optional<json> versionRefusal(const json& message) {
  const json& params = paramsOf(message);
  const json* meta = metaOf(params);
  if (meta == nullptr || !meta->contains(kProtocolVersionKey)) return std::nullopt;
  const json& id = message.at("id");
  const std::string version = requestVersion(params);
  if (version != kModernVersion) {
    return jsonrpc::makeError(
        id, kUnsupportedProtocolVersion,
        "Unsupported protocol version " + version +
            ": this server speaks 2026-07-28 per request, and 2025-11-25 (and 2025-06-18, "
            "2025-03-26) through initialize",
        json{{"supported", supportedVersions()}, {"requested", version}});
  }
  if (const auto level = meta->find(kLogLevelKey);
      level != meta->end() &&
      (!level->is_string() || logLevelIndex(level->get_ref<const std::string&>()) < 0)) {
    return invalidParams(id, std::string("params._meta[\"") + kLogLevelKey +
                                 "\"] must be one of debug, info, notice, warning, error, "
                                 "critical, alert, emergency");
  }
  return std::nullopt;
}

bool declaresTasksExtension(const json& params) {
  if (!isModern(params)) return false;
  const auto& capabilities = params.at("_meta").at(kClientCapabilitiesKey);
  if (!capabilities.is_object()) return false;
  const auto extensions = capabilities.find("extensions");
  return extensions != capabilities.end() && extensions->is_object() &&
         extensions->contains(kTasksExtension);
}

jsonrpc::Error tasksExtensionRequired(const std::string& method) {
  return jsonrpc::Error(
      kMissingRequiredClientCapability,
      method + " needs the tasks extension: declare \"" + std::string(kTasksExtension) +
          "\" in params._meta's clientCapabilities.extensions",
      json{{"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}});
}

std::optional<json> methodRefusal(const json& message) {
  if (!isModern(paramsOf(message))) return std::nullopt;
  const std::string& method = message.at("method").get_ref<const std::string&>();
  if (std::find(kRemovedMethods.begin(), kRemovedMethods.end(), method) == kRemovedMethods.end()) {
    return std::nullopt;
  }
  return jsonrpc::makeError(message.at("id"), jsonrpc::kMethodNotFound,
                            "Method not found: " + method +
                                " was removed in MCP 2026-07-28 (server/discover tells what this "
                                "server offers)");
}

std::optional<json> refusal(const json& message) {
  if (auto refused = envelopeRefusal(message)) return refused;
  if (auto refused = versionRefusal(message)) return refused;
  return methodRefusal(message);
}

int requestLogLevel(const json& params) {
  const json* meta = metaOf(params);
  if (meta == nullptr) return -1;
  const auto level = meta->find(kLogLevelKey);
  if (level == meta->end() || !level->is_string()) return -1;
  return logLevelIndex(level->get_ref<const std::string&>());
}

json cacheable(json result, int ttl_ms, std::string_view scope) {
  result["resultType"] = "complete";
  result["ttlMs"] = ttl_ms;
  result["cacheScope"] = scope;
  return result;
}

}  // namespace mcp::era
