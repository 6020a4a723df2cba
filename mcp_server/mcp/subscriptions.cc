#include "mcp/subscriptions.h"

#include <vector>

#include "jsonrpc/errors.h"
#include "jsonrpc/protocol_era.h"

namespace mcp {

using nlohmann::json;

namespace {

constexpr const char* kSubscriptionIdKey = "io.modelcontextprotocol/subscriptionId";

bool asked(const json& notifications, const char* key) {
  return notifications.value(key, json()) == true;
}

}  // namespace

ListenFilter ListenFilter::parse(const json& notifications, const Announceable& offered) {
  if (!notifications.is_object()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "subscriptions/listen needs params.notifications, an object such as "
                         "{\"toolsListChanged\": true}");
  }
  ListenFilter filter;
  filter.tools = offered.tools_list_changed && asked(notifications, "toolsListChanged");
  filter.prompts = offered.prompts_list_changed && asked(notifications, "promptsListChanged");
  filter.resources = offered.resources_list_changed && asked(notifications, "resourcesListChanged");
  const json uris = notifications.value("resourceSubscriptions", json());
  if (offered.resource_updates && uris.is_array()) {
    for (const json& uri : uris) {
      if (uri.is_string()) filter.resource_uris.insert(uri.get<std::string>());
    }
  }
  return filter;
}

json ListenFilter::toJson() const {
  json out = json::object();
  if (tools) out["toolsListChanged"] = true;
  if (prompts) out["promptsListChanged"] = true;
  if (resources) out["resourcesListChanged"] = true;
  if (!resource_uris.empty()) out["resourceSubscriptions"] = resource_uris;
  return out;
}

json Subscriptions::notification(const std::string& method, const json& id, json params) {
  if (!id.is_null()) params["_meta"][kSubscriptionIdKey] = id;  // null: a stream nobody opened
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::uint64_t Subscriptions::listen(json id, ListenFilter filter, Sink sink, std::string audience) {
  std::lock_guard lock(mutex_);
  const std::uint64_t key = next_key_++;
  streams_.emplace(key,
                   Stream{std::move(id), std::move(filter), std::move(sink), std::move(audience)});
  return key;
}

void Subscriptions::stop(std::uint64_t key) {
  std::lock_guard lock(mutex_);
  streams_.erase(key);
}

std::size_t Subscriptions::size() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

std::set<std::string> Subscriptions::subscribedUris(const std::string& audience,
                                                    const std::string& prefix) const {
  std::set<std::string> out;
  std::lock_guard lock(mutex_);
  for (const auto& [key, stream] : streams_) {
    if (stream.audience != audience) continue;
    for (auto it = stream.filter.resource_uris.lower_bound(prefix);
         it != stream.filter.resource_uris.end() && it->starts_with(prefix); ++it) {
      out.insert(*it);
    }
  }
  return out;
}

void Subscriptions::publish(const std::string& method, const std::string* uri,
                            const std::string& audience) {
  std::vector<std::pair<Sink, json>> deliveries;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, stream] : streams_) {
      if (!audience.empty() && stream.audience != audience) continue;
      const ListenFilter& f = stream.filter;
      const bool wanted = uri != nullptr ? f.resource_uris.contains(*uri)
                          : method == "notifications/tools/list_changed"   ? f.tools
                          : method == "notifications/prompts/list_changed" ? f.prompts
                                                                           : f.resources;
      if (!wanted) continue;
      json params = uri != nullptr ? json{{"uri", *uri}} : json::object();
      deliveries.emplace_back(stream.sink, notification(method, stream.id, std::move(params)));
    }
  }
  for (auto& [sink, message] : deliveries) sink(message);
}

}  // namespace mcp
