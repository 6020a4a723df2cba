#include "transport/session_registry.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>
#include <utility>

namespace transport {

std::string newSessionId(const std::string& route_tag) {
  std::array<std::uint8_t, 16> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom for Mcp-Session-Id");
    }
    filled += static_cast<std::size_t>(got);
  }
  constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(bytes.size() * 2);
  for (const std::uint8_t byte : bytes) {
    id.push_back(kHex[byte >> 4]);
    id.push_back(kHex[byte & 0x0f]);
  }
  if (!route_tag.empty()) id += "~" + route_tag;
  return id;
}

SessionRegistry::Lease::~Lease() {
  if (!entry_) return;  // moved-from
  std::lock_guard lock(entry_->mutex);
  --entry_->active;
  entry_->last_used = Clock::now();
}

bool SessionRegistry::add(const std::string& id, const std::string& principal,
                          std::shared_ptr<jsonrpc::Endpoint> endpoint, Clock::time_point now,
                          std::size_t max_sessions) {
  auto entry = std::make_shared<Entry>();
  entry->endpoint = std::move(endpoint);
  entry->principal = principal;
  entry->last_used = now;
  std::lock_guard lock(mutex_);
  if (max_sessions != 0 && mcpSessionsLocked() >= max_sessions) return false;
  sessions_[id] = std::move(entry);
  return true;
}

void SessionRegistry::addPrincipalEndpoint(const std::string& id, const std::string& principal,
                                           std::shared_ptr<jsonrpc::Endpoint> endpoint,
                                           Clock::time_point now) {
  auto entry = std::make_shared<Entry>();
  entry->endpoint = std::move(endpoint);
  entry->principal = principal;
  entry->is_mcp_session = false;
  entry->last_used = now;
  std::lock_guard lock(mutex_);
  sessions_[id] = std::move(entry);
}

std::size_t SessionRegistry::mcpSessionsLocked() const {
  return static_cast<std::size_t>(std::count_if(
      sessions_.begin(), sessions_.end(), [](const auto& e) { return e.second->is_mcp_session; }));
}

std::optional<SessionRegistry::Lease> SessionRegistry::acquire(const std::string& id,
                                                               const std::string& principal,
                                                               Clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->principal != principal) return std::nullopt;
  {
    std::lock_guard entry_lock(it->second->mutex);
    ++it->second->active;
    it->second->last_used = now;
  }
  return Lease(it->second);
}

std::shared_ptr<jsonrpc::Endpoint> SessionRegistry::remove(const std::string& id,
                                                           const std::string& principal) {
  std::lock_guard lock(mutex_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->principal != principal) return nullptr;
  auto endpoint = it->second->endpoint;
  sessions_.erase(it);
  return endpoint;
}

std::vector<std::shared_ptr<jsonrpc::Endpoint>> SessionRegistry::takeIdle(
    Clock::time_point now, Clock::duration idle_timeout) {
  std::vector<std::shared_ptr<jsonrpc::Endpoint>> expired;
  std::lock_guard lock(mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    bool idle = false;
    {
      std::lock_guard entry_lock(it->second->mutex);
      idle = it->second->active == 0 && now - it->second->last_used >= idle_timeout;
    }
    if (idle) {
      expired.push_back(it->second->endpoint);
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return expired;
}

std::vector<std::shared_ptr<jsonrpc::Endpoint>> SessionRegistry::takeAll() {
  std::vector<std::shared_ptr<jsonrpc::Endpoint>> all;
  std::lock_guard lock(mutex_);
  for (auto& [id, entry] : sessions_) all.push_back(entry->endpoint);
  sessions_.clear();
  return all;
}

std::size_t SessionRegistry::size() const {
  std::lock_guard lock(mutex_);
  return mcpSessionsLocked();
}

}  // namespace transport
