#include "mcp/client_requests.h"

#include <stdexcept>

namespace mcp {

using nlohmann::json;

json ClientRequests::ask(const Send& send, const std::string& method, json params,
                         CancelToken& cancel, std::chrono::milliseconds timeout) {
  auto pending = std::make_shared<Pending>();
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (closed_) throw std::runtime_error("the client connection closed");
    id = "server-request-" + std::to_string(next_id_++);
    pending_[id] = pending;
  }
  const CancelSubscription on_cancel(cancel, [this, pending] {
    std::lock_guard lock(mutex_);
    pending->ended = true;
    changed_.notify_all();
  });
  send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  std::unique_lock lock(mutex_);
  const bool answered = changed_.wait_for(
      lock, timeout, [&] { return pending->response.has_value() || pending->ended; });
  pending_.erase(id);
  if (!pending->response) {
    throw std::runtime_error(!answered ? "the client did not answer " + method + " in time"
                                       : "the request was cancelled or its connection closed");
  }
  const json& response = *pending->response;
  if (const auto error = response.find("error"); error != response.end()) {
    const json message = error->is_object() ? error->value("message", json()) : json();
    throw std::runtime_error("the client answered " + method + " with an error: " +
                             (message.is_string() ? message.get<std::string>() : error->dump()));
  }
  return response.value("result", json::object());
}

bool ClientRequests::deliver(const json& response) {
  const json id = response.value("id", json());
  if (!id.is_string()) return false;
  std::lock_guard lock(mutex_);
  const auto it = pending_.find(id.get<std::string>());
  if (it == pending_.end()) return false;
  it->second->response = response;
  changed_.notify_all();
  return true;
}

void ClientRequests::closeAll() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& [id, pending] : pending_) pending->ended = true;
  changed_.notify_all();
}

}  // namespace mcp
