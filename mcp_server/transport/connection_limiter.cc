#include "transport/connection_limiter.h"

#include <utility>

namespace transport {

ConnectionLimiter::Slot& ConnectionLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::move(other.owner_);
    address_ = std::move(other.address_);
  }
  return *this;
}

void ConnectionLimiter::Slot::release() noexcept {
  if (!owner_) return;
  owner_->release(address_);
  owner_.reset();
}

std::optional<ConnectionLimiter::Slot> ConnectionLimiter::tryAcquire(const std::string& address,
                                                                     std::string& refusal) {
  std::lock_guard lock(mutex_);
  if (max_total_ != 0 && total_ >= max_total_) {
    refusal = "the server has " + std::to_string(total_) +
              " open connections, its limit (http.max_connections)";
    return std::nullopt;
  }
  auto& mine = per_address_[address];
  if (max_per_address_ != 0 && mine >= max_per_address_) {
    refusal = address + " has " + std::to_string(mine) +
              " open connections, the limit per address (http.max_connections_per_address)";
    return std::nullopt;
  }
  ++mine;
  ++total_;
  return Slot(shared_from_this(), address);
}

void ConnectionLimiter::release(const std::string& address) noexcept {
  std::lock_guard lock(mutex_);
  --total_;
  const auto it = per_address_.find(address);
  if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

std::size_t ConnectionLimiter::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::size_t ConnectionLimiter::fromAddress(const std::string& address) const {
  std::lock_guard lock(mutex_);
  const auto it = per_address_.find(address);
  return it == per_address_.end() ? 0 : it->second;
}

}  // namespace transport
