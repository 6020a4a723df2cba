// Fair share: how many of something (running executions) each client holds, with a per-client
// cap, so that one client at its limit leaves the rest of the server's capacity to the others.
// A client is a quota key (server/caller.h: an MCP session, or a tokens-file principal), and
// each claim names the key's cap. Claiming never waits. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/execution_slots.h"

namespace server {

class ClientQuota {
 public:
  ClientQuota() = default;
  ClientQuota(const ClientQuota&) = delete;
  ClientQuota& operator=(const ClientQuota&) = delete;

  // Gives its unit back when destroyed.
  class Claim {
   public:
    Claim(ClientQuota* quota, std::string owner) noexcept
        : quota_(quota), owner_(std::move(owner)) {}
    Claim(Claim&& other) noexcept : quota_(other.quota_), owner_(std::move(other.owner_)) {
      other.quota_ = nullptr;
    }
    Claim& operator=(Claim&&) = delete;
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    ~Claim() {
      if (quota_ != nullptr) quota_->release(owner_);
    }

   private:
    ClientQuota* quota_;
    std::string owner_;
  };

  // One unit for `owner` unless it holds `cap` already.
  [[nodiscard]] std::optional<Claim> tryClaim(const std::string& owner, std::size_t cap) {
    const std::lock_guard lock(mutex_);
    const auto it = held_.find(owner);
    if (it != held_.end() && it->second >= cap) return std::nullopt;
    if (cap == 0) return std::nullopt;
    ++held_[owner];
    return std::optional<Claim>(std::in_place, this, owner);
  }

  [[nodiscard]] std::size_t held(const std::string& owner) {
    const std::lock_guard lock(mutex_);
    const auto it = held_.find(owner);
    return it == held_.end() ? 0 : it->second;
  }

 private:
  void release(const std::string& owner) noexcept {
    const std::lock_guard lock(mutex_);
    const auto it = held_.find(owner);
    if (it == held_.end()) return;
    if (--it->second == 0) held_.erase(it);  // clients come and go: no entry outlives its claims
  }

  std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> held_;
};

// What an execution holds while it runs: its client's share and one server-wide slot.
struct ExecutionClaim {
  ClientQuota::Claim client;
  ExecutionSlots::Slot server;
};

}  // namespace server
