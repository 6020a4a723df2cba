// Remembers sessions that are gone and why: those whose sandbox died (agent killed, container
// killed from outside, OOM, a broken channel), so the next call under the same id says so instead
// of silently handing out an empty sandbox; and those that ended, so a call naming one says why.
// Bounded: the oldest entries go first. Not thread-safe (SessionRegistry's mutex guards it).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace server {

class LostSessions {
 public:
  inline static constexpr std::size_t kMaxRemembered = 4096;

  void remember(const std::string& key, std::string reason) {
    if (reasons_.insert_or_assign(key, std::move(reason)).second) order_.push_back(key);
    while (order_.size() > kMaxRemembered) {
      reasons_.erase(order_.front());
      order_.pop_front();
    }
  }

  // The reason the session under `key` was lost, once: the entry is removed.
  [[nodiscard]] std::optional<std::string> take(const std::string& key) {
    const auto it = reasons_.find(key);
    if (it == reasons_.end()) return std::nullopt;
    std::string reason = std::move(it->second);
    reasons_.erase(it);
    std::erase(order_, key);
    return reason;
  }

  // The reason under `key`, kept.
  [[nodiscard]] std::optional<std::string> peek(const std::string& key) const {
    const auto it = reasons_.find(key);
    if (it == reasons_.end()) return std::nullopt;
    return it->second;
  }

  void erase(const std::string& key) {
    if (reasons_.erase(key) > 0) std::erase(order_, key);
  }

  // Forgets every key starting with `prefix` (a client that went away).
  void eraseWithPrefix(const std::string& prefix) {
    std::erase_if(order_, [&](const std::string& key) {
      if (key.compare(0, prefix.size(), prefix) != 0) return false;
      reasons_.erase(key);
      return true;
    });
  }

 private:
  std::map<std::string, std::string> reasons_;
  std::deque<std::string> order_;  // insertion order, for eviction
};

}  // namespace server
