// subscriptions/listen (MCP 2026-07-28): open listen streams, each with the notification types
// its client asked for, and the changes the server announces to them. A stream gets only what it
// asked for and the server offers; every notification carries the stream's subscriptionId (the
// listen request's id). The server offers what it was built with (its capabilities say so).
// Each stream has an audience (its caller's owner): what concerns one owner's sandboxes reaches
// only that owner's streams; what concerns everyone is published without an audience.
// Thread-safe; sinks are called outside the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace mcp {

// What a server can announce.
struct Announceable {
  bool tools_list_changed = false;
  bool prompts_list_changed = false;
  bool resources_list_changed = false;
  bool resource_updates = false;  // notifications/resources/updated for resourceSubscriptions
};

// The filter of one listen stream: what its client asked for, cut down to what is announceable.
struct ListenFilter {
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  std::set<std::string> resource_uris;

  // params.notifications of a subscriptions/listen request (unknown keys ignored), restricted to
  // `offered`. Throws jsonrpc::Error (-32602) when it is not an object.
  [[nodiscard]] static ListenFilter parse(const nlohmann::json& notifications,
                                          const Announceable& offered);
  // The acknowledged subset, as the ack's params.notifications.
  [[nodiscard]] nlohmann::json toJson() const;
};

class Subscriptions {
 public:
  using Sink = std::function<void(const nlohmann::json& notification)>;

  explicit Subscriptions(Announceable offered) : offered_(offered) {}
  Subscriptions(const Subscriptions&) = delete;
  Subscriptions& operator=(const Subscriptions&) = delete;

  [[nodiscard]] const Announceable& offered() const noexcept { return offered_; }

  // Registers a stream of `audience`; `id` is its subscriptionId (null: none, for a stream the
  // server opened itself). Returns the key for stop().
  [[nodiscard]] std::uint64_t listen(nlohmann::json id, ListenFilter filter, Sink sink,
                                     std::string audience = {});
  void stop(std::uint64_t key);
  [[nodiscard]] std::size_t size() const;

  // Announce a change to the streams that asked for it: every stream's, or only `audience`'s.
  void toolsChanged() { publish("notifications/tools/list_changed", nullptr, {}); }
  void promptsChanged() { publish("notifications/prompts/list_changed", nullptr, {}); }
  void resourcesChanged(const std::string& audience = {}) {
    publish("notifications/resources/list_changed", nullptr, audience);
  }
  void resourceUpdated(const std::string& uri, const std::string& audience = {}) {
    publish("notifications/resources/updated", &uri, audience);
  }

  // The resource URIs starting with `prefix` that streams of `audience` subscribed to.
  [[nodiscard]] std::set<std::string> subscribedUris(const std::string& audience,
                                                     const std::string& prefix) const;

  // A notification for the stream `id`, its subscriptionId in params._meta. Pure.
  [[nodiscard]] static nlohmann::json notification(
      const std::string& method, const nlohmann::json& id,
      nlohmann::json params = nlohmann::json::object());

 private:
  struct Stream {
    nlohmann::json id;
    ListenFilter filter;
    Sink sink;
    std::string audience;
  };

  void publish(const std::string& method, const std::string* uri, const std::string& audience);

  const Announceable offered_;
  mutable std::mutex mutex_;
  std::uint64_t next_key_ = 1;
  std::map<std::uint64_t, Stream> streams_;
};

}  // namespace mcp
