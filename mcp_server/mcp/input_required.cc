#include "mcp/input_required.h"

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"

namespace mcp {
namespace {

using nlohmann::json;

// The client capability an input request's method needs, or "" for a method MRTR does not have.
std::string capabilityFor(const json& request) {
  const std::string method = request.is_object() ? request.value("method", "") : "";
  if (method == "elicitation/create") return "elicitation";
  if (method == "sampling/createMessage") return "sampling";
  if (method == "roots/list") return "roots";
  return {};
}

}  // namespace

json declaredCapabilities(const json& params) {
  if (!params.is_object()) return json::object();
  const json meta = params.value("_meta", json::object());
  if (!meta.is_object()) return json::object();
  const json declared = meta.value(era::kClientCapabilitiesKey, json::object());
  return declared.is_object() ? declared : json::object();
}

tools::ToolInputs requestInputs(const json& params, const RequestStateSeal& seal,
                                const std::string& owner, const std::string& purpose) {
  tools::ToolInputs inputs;
  inputs.client_capabilities = declaredCapabilities(params);
  const json responses = params.value("inputResponses", json::object());
  if (!responses.is_object()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "params.inputResponses must be an object: input key -> the client's "
                         "result for that input request");
  }
  for (const auto& [key, response] : responses.items()) {
    if (!response.is_object()) {
      throw jsonrpc::Error(jsonrpc::kInvalidParams,
                           "params.inputResponses[\"" + key +
                               "\"] must be the result object of the input request (e.g. "
                               "{\"action\": \"accept\", \"content\": {...}})");
    }
  }
  inputs.responses = responses;
  const json state = params.value("requestState", json());
  if (state.is_null()) return inputs;
  auto opened = state.is_string() ? seal.open(state.get<std::string>(), owner, purpose)
                                  : std::optional<json>();
  if (!opened) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "params.requestState failed its integrity check (altered, expired, or "
                         "issued for another request): send the request again without "
                         "requestState and inputResponses to start over");
  }
  inputs.state = std::move(*opened);
  return inputs;
}

json missingCapabilities(const json& required, const json& declared) {
  json missing = json::object();
  if (!required.is_object()) return missing;
  for (const auto& [name, value] : required.items()) {
    if (!declared.is_object() || !declared.contains(name)) missing[name] = value;
  }
  return missing;
}

json declaredInputRequests(const json& requests, const json& declared, json* needed) {
  json kept = json::object();
  for (const auto& [key, request] : requests.items()) {
    const std::string capability = capabilityFor(request);
    if (capability.empty()) continue;  // not an input request MRTR has
    if (declared.is_object() && declared.contains(capability)) {
      kept[key] = request;
    } else if (needed != nullptr) {
      (*needed)[capability] = json::object();
    }
  }
  return kept;
}

json inputRequiredResult(const json& requests, const json& state, const json& declared,
                         const RequestStateSeal& seal, const std::string& owner,
                         const std::string& purpose) {
  json needed = json::object();
  json kept = declaredInputRequests(requests, declared, &needed);
  if (kept.empty()) {
    throw jsonrpc::Error(era::kMissingRequiredClientCapability,
                         "This request needs input from the client, which it did not declare "
                         "the capability for: add it to params._meta[\"" +
                             std::string(era::kClientCapabilitiesKey) + "\"]",
                         json{{"requiredCapabilities", needed}});
  }
  json result{{"resultType", "input_required"}, {"inputRequests", std::move(kept)}};
  if (!state.is_null()) result["requestState"] = seal.seal(state, owner, purpose, kRequestStateTtl);
  return result;
}

}  // namespace mcp
