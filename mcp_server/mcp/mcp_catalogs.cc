// McpEndpoint's catalogs: prompts, completion, resources (the catalog's beside the sessions'
// sandbox:// files) and 2026-07-28 listen streams. Each is served only when the server has it
// (ServerFeatures), and the capabilities say exactly that.
#include <memory>

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"
#include "mcp/input_required.h"
#include "mcp/mcp_server.h"
#include "mcp/parked_request.h"

namespace mcp {

using jsonrpc::json;

json McpEndpoint::capabilities() const {
  const Subscriptions* listen = features_.subscriptions;
  const Announceable offered = listen != nullptr ? listen->offered() : Announceable{};
  json out{
      {"tools", {{"listChanged", offered.tools_list_changed}}},
      {"resources",
       {{"subscribe", offered.resource_updates}, {"listChanged", offered.resources_list_changed}}},
      {"logging", json::object()}};
  if (features_.prompts != nullptr && !features_.prompts->empty()) {
    out["prompts"] = {{"listChanged", offered.prompts_list_changed}};
  }
  if (features_.completions != nullptr && !features_.completions->empty()) {
    out["completions"] = json::object();
  }
  return out;
}

void McpEndpoint::registerCatalogMethods() {
  dispatcher_.onRequest("resources/templates/list", [this](const json& params, auto&) {
    requireInitialized(params);
    return listResourceTemplates(params);
  });
  dispatcher_.onRequest("resources/list", [this](const json& params, auto&) {
    requireInitialized(params);
    return listResources(params);
  });
  dispatcher_.onRequest("resources/read", [this](const json& params, auto&) {
    requireInitialized(params);
    return readResource(params);
  });
  if (features_.prompts != nullptr && !features_.prompts->empty()) {
    dispatcher_.onRequest("prompts/list", [this](const json& params, auto&) {
      requireInitialized(params);
      return era::cacheable(features_.prompts->list(), era::kStaticTtlMs, "public");
    });
    dispatcher_.onRequest("prompts/get", [this](const json& params, auto&) {
      requireInitialized(params);
      return getPrompt(params);
    });
  }
  if (features_.completions != nullptr && !features_.completions->empty()) {
    dispatcher_.onRequest("completion/complete", [this](const json& params, auto&) {
      requireInitialized(params);
      json result = features_.completions->complete(params);
      result["resultType"] = "complete";
      return result;
    });
  }
  if (features_.subscriptions != nullptr) {
    dispatcher_.onRequest(
        "subscriptions/listen",
        [this](const json& params, jsonrpc::CallContext& call) { return listen(params, call); });
  }
  if (features_.subscriptions != nullptr && features_.subscriptions->offered().resource_updates) {
    dispatcher_.onRequest("resources/subscribe",
                          [this](const json& params, jsonrpc::CallContext& call) {
                            return subscribeResource(params, call);
                          });
    dispatcher_.onRequest("resources/unsubscribe", [this](const json& params, auto&) {
      return unsubscribeResource(params);
    });
  }
}

// The catalog's resources never change while the server runs; a session's files do, so a list
// that holds them is cached by nobody but this caller, and not at all.
json McpEndpoint::listResources(const json& /*params*/) {
  json resources = features_.resources != nullptr ? features_.resources->list() : json::array();
  if (!features_.session_resources) {
    return era::cacheable(json{{"resources", std::move(resources)}}, era::kStaticTtlMs, "public");
  }
  json sessions = resources_.list(caller_.owner);
  for (auto& resource : sessions["resources"]) resources.push_back(std::move(resource));
  sessions["resources"] = std::move(resources);
  return era::cacheable(std::move(sessions), 0, "private");
}

json McpEndpoint::listResourceTemplates(const json& /*params*/) {
  json templates = features_.session_resources ? resources_.listTemplates()
                                               : json{{"resourceTemplates", json::array()}};
  if (features_.resources != nullptr) {
    for (auto& entry : features_.resources->templates()) {
      templates["resourceTemplates"].push_back(std::move(entry));
    }
  }
  return era::cacheable(std::move(templates), era::kStaticTtlMs, "public");
}

json McpEndpoint::readResource(const json& params) {
  const json uri = params.value("uri", json());
  if (uri.is_string() && features_.resources != nullptr) {
    if (auto contents = features_.resources->read(uri.get<std::string>())) {
      return era::cacheable(std::move(*contents), era::kStaticTtlMs, "private");
    }
  }
  const bool modern = era::isModern(params);
  // 2026-07-28 (SEP-2164) answers a missing resource with -32602, not 2025's -32002.
  const int not_found = modern ? jsonrpc::kInvalidParams : kResourceNotFound;
  if (!features_.session_resources) {
    if (!uri.is_string()) {
      throw jsonrpc::Error(jsonrpc::kInvalidParams, "resources/read needs params.uri (a string)");
    }
    throw jsonrpc::Error(not_found, "Resource not found: " + uri.get<std::string>(),
                         json{{"uri", uri}});
  }
  try {
    return era::cacheable(resources_.read(caller_.owner, params), 0, "private");
  } catch (const jsonrpc::Error& e) {
    if (e.code() != kResourceNotFound || !modern) throw;
    throw jsonrpc::Error(jsonrpc::kInvalidParams, e.what(), e.data());
  }
}

json McpEndpoint::getPrompt(const json& params) {
  const json name = params.value("name", json());
  if (!name.is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "prompts/get needs params.name (a string)");
  }
  const Prompt* prompt = features_.prompts->find(name.get<std::string>());
  if (prompt == nullptr) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "Unknown prompt: " + name.get<std::string>() +
                                                      " (prompts/list names them)");
  }
  const json arguments = params.value("arguments", json::object());
  if (const std::string problem = PromptCatalog::argumentsProblem(*prompt, arguments);
      !problem.empty()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "prompts/get: " + problem);
  }
  const bool modern = era::isModern(params);
  const std::string purpose = "prompts/get:" + prompt->spec.name;
  const tools::ToolInputs inputs =
      modern ? requestInputs(params, seal_, caller_.owner, purpose) : tools::ToolInputs{};
  PromptResult rendered = prompt->handler(arguments, inputs);
  if (!rendered.input_requests.empty()) {
    if (!modern) {
      throw jsonrpc::Error(jsonrpc::kInvalidParams,
                           "prompt " + prompt->spec.name +
                               " needs input from the client (MCP 2026-07-28 input-required "
                               "results); use a 2026-07-28 client");
    }
    return inputRequiredResult(rendered.input_requests, rendered.request_state,
                               declaredCapabilities(params), seal_, caller_.owner, purpose);
  }
  json result{{"messages", std::move(rendered.messages)}, {"resultType", "complete"}};
  if (!rendered.description.empty()) result["description"] = std::move(rendered.description);
  return result;
}

json McpEndpoint::listen(const json& params, jsonrpc::CallContext& call) {
  if (!era::isModern(params)) {
    throw jsonrpc::Error(jsonrpc::kMethodNotFound,
                         "Method not found: subscriptions/listen is MCP 2026-07-28");
  }
  Subscriptions& hub = *features_.subscriptions;
  const ListenFilter filter =
      ListenFilter::parse(params.value("notifications", json()), hub.offered());
  auto reply = call.answerLater();
  if (!reply || !call.transport.notify) {
    throw jsonrpc::Error(jsonrpc::kInvalidRequest,
                         "subscriptions/listen needs a transport that streams (Streamable HTTP "
                         "or stdio), and cannot be part of a batch");
  }
  const json id = call.id;
  const auto notify = call.transport.notify;
  notify(Subscriptions::notification("notifications/subscriptions/acknowledged", id,
                                     {{"notifications", filter.toJson()}}));
  auto parked = std::make_shared<ParkedRequest>(std::move(reply));
  // The stream's sink keeps the parked request alive until hub.stop() lets it go.
  if (features_.file_watch != nullptr) {
    for (const auto& uri : filter.resource_uris) features_.file_watch->baseline(caller_.owner, uri);
  }
  const std::uint64_t key = hub.listen(
      id, filter, [notify, parked](const json& message) { notify(message); }, caller_.owner);
  // Ends when the client closes the stream (a hang-up, or notifications/cancelled on stdio) or the
  // endpoint closes (which cancels every admitted request): the graceful result ends it.
  parked->watch(cancelTokenFor(call), call.transport.abandoned,
                [&hub, key, id](ParkedRequest& ended, bool) {
                  hub.stop(key);
                  ended.reply().complete([&id] {
                    return json{{"resultType", "complete"},
                                {"_meta", {{"io.modelcontextprotocol/subscriptionId", id}}}};
                  });
                });
  return json();
}

namespace {

std::string subscribedUri(const json& params, const char* method) {
  const json uri = params.value("uri", json());
  if (!uri.is_string() || uri.get_ref<const std::string&>().empty()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         std::string(method) + " needs params.uri (a resource's URI)");
  }
  return uri.get<std::string>();
}

}  // namespace

json McpEndpoint::subscribeResource(const json& params, jsonrpc::CallContext& call) {
  requireInitialized(params);
  const std::string uri = subscribedUri(params, "resources/subscribe");
  ListenFilter filter;
  filter.resource_uris.insert(uri);
  auto notify = call.transport.notify_outlives_request ? call.transport.notify : nullptr;
  if (features_.file_watch != nullptr) features_.file_watch->baseline(caller_.owner, uri);
  const std::uint64_t key = features_.subscriptions->listen(
      call.id, std::move(filter),
      [notify](const json& message) {
        if (notify) notify(message);
      },
      caller_.owner);
  std::lock_guard lock(mutex_);
  if (const auto old = resource_subscriptions_.find(uri); old != resource_subscriptions_.end()) {
    features_.subscriptions->stop(old->second);
  }
  resource_subscriptions_[uri] = key;
  return json{{"resultType", "complete"}};
}

json McpEndpoint::unsubscribeResource(const json& params) {
  requireInitialized(params);
  const std::string uri = subscribedUri(params, "resources/unsubscribe");
  std::lock_guard lock(mutex_);
  if (const auto it = resource_subscriptions_.find(uri); it != resource_subscriptions_.end()) {
    features_.subscriptions->stop(it->second);
    resource_subscriptions_.erase(it);
  }
  return json{{"resultType", "complete"}};
}

void McpEndpoint::listenForListChanges(const std::function<void(const json&)>& notify) {
  ListenFilter filter;
  filter.resources = true;
  const std::uint64_t key = features_.subscriptions->listen(nullptr, filter, notify, caller_.owner);
  std::lock_guard lock(mutex_);
  // Under "" (no URI is empty): a second initialize replaces the first one's stream.
  if (const auto old = resource_subscriptions_.find(""); old != resource_subscriptions_.end()) {
    features_.subscriptions->stop(old->second);
  }
  resource_subscriptions_[""] = key;
}

void McpEndpoint::stopResourceSubscriptions() {
  std::lock_guard lock(mutex_);
  for (const auto& [uri, key] : resource_subscriptions_) features_.subscriptions->stop(key);
  resource_subscriptions_.clear();
}

}  // namespace mcp
