#include "mcp/cancellable_requests.h"

#include <iterator>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace mcp {

struct CancellableRequests::Registry {
  std::mutex mutex;
  bool closed = false;
  // Weak: the request's own copies decide how long it stays cancellable. A multimap: a client
  // that reuses the id of a request still running must not make that one unreachable by close().
  std::unordered_multimap<std::string, std::weak_ptr<CancelToken>> by_id;

  // Called by a token's deleter: its entry is the expired one.
  void forgetExpired(const std::string& key) {
    std::lock_guard lock(mutex);
    auto [it, end] = by_id.equal_range(key);
    while (it != end) it = it->second.expired() ? by_id.erase(it) : std::next(it);
  }
};

CancellableRequests::CancellableRequests() : registry_(std::make_shared<Registry>()) {}

std::shared_ptr<CancelToken> CancellableRequests::admit(const nlohmann::json& id) {
  std::string key = id.dump();
  // The last copy unregisters the request, however it ends: answered, refused or dropped.
  auto unregister = [registry = registry_, key](CancelToken* gone) {
    registry->forgetExpired(key);
    delete gone;
  };
  std::shared_ptr<CancelToken> token(new CancelToken(), std::move(unregister));
  bool admitted = false;
  {
    std::lock_guard lock(registry_->mutex);
    if (!registry_->closed) {
      registry_->by_id.emplace(std::move(key), token);
      admitted = true;
    }
  }
  if (!admitted) return nullptr;  // the token goes here, outside the mutex its deleter takes
  return token;
}

bool CancellableRequests::cancel(const nlohmann::json& id) {
  std::vector<std::shared_ptr<CancelToken>> named;  // released after the mutex: maybe last copies
  {
    std::lock_guard lock(registry_->mutex);
    auto [it, end] = registry_->by_id.equal_range(id.dump());
    for (; it != end; ++it) {
      if (auto token = it->second.lock()) named.push_back(std::move(token));
    }
  }
  for (const auto& token : named) token->cancel();
  return !named.empty();
}

void CancellableRequests::closeAll() {
  std::vector<std::shared_ptr<CancelToken>> admitted;  // released after the mutex, like cancel()
  {
    std::lock_guard lock(registry_->mutex);
    registry_->closed = true;
    for (const auto& [id, weak] : registry_->by_id) {
      if (auto token = weak.lock()) admitted.push_back(std::move(token));
    }
  }
  for (const auto& token : admitted) token->cancel();
}

}  // namespace mcp
