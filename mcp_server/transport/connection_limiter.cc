#include "transport/connection_limiter.h"

#include <algorithm>
#include <utility>

namespace transport {

ConnectionLimiter::Slot::Slot(std::shared_ptr<ConnectionLimiter> owner,
                              std::unique_ptr<Entry> entry)
    : owner_(std::move(owner)), entry_(std::move(entry)) {}

ConnectionLimiter::Slot& ConnectionLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::move(other.owner_);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void ConnectionLimiter::Slot::markIdle(Reclaim reclaim) {
  if (owner_) owner_->markIdle(*entry_, std::move(reclaim));
}

bool ConnectionLimiter::Slot::markBusy() { return !owner_ || owner_->markBusy(*entry_); }

void ConnectionLimiter::Slot::release() noexcept {
  if (!owner_) return;
  owner_->release(*entry_);
  owner_.reset();
  entry_.reset();
}

std::optional<ConnectionLimiter::Slot> ConnectionLimiter::tryAcquire(const std::string& address,
                                                                     std::string& refusal) {
  Reclaim reclaim;  // run once the lock is released
  std::optional<Slot> slot;
  {
    std::lock_guard lock(mutex_);
    auto& mine = addresses_[address];
    if (max_per_address_ != 0 && mine.open >= max_per_address_) {
      reclaim = reclaimOldest(mine.idle);
      if (!reclaim) {
        refusal = address + " has " + std::to_string(mine.open) +
                  " open connections, all with a request under way, the limit per address "
                  "(http.max_connections_per_address)";
        if (mine.open == 0) addresses_.erase(address);
        return std::nullopt;
      }
    } else if (max_total_ != 0 && total_ >= max_total_) {
      reclaim = reclaimOldest(idle_);
      if (!reclaim) {
        refusal = "the server has " + std::to_string(total_) +
                  " open connections, all with a request under way, its limit "
                  "(http.max_connections)";
        if (mine.open == 0) addresses_.erase(address);
        return std::nullopt;
      }
    }
    // Looked up again: reclaiming this address's last connection erased its state.
    ++addresses_[address].open;
    ++total_;
    auto entry = std::make_unique<Entry>();
    entry->address = address;
    slot.emplace(Slot(shared_from_this(), std::move(entry)));
  }
  if (reclaim) reclaim();
  return slot;
}

// The oldest entry of `order`: its place is given up at once (the newcomer takes it), and the
// connection is asked to close.
ConnectionLimiter::Reclaim ConnectionLimiter::reclaimOldest(const IdleOrder& order) {
  if (order.empty()) return nullptr;
  Entry& victim = *order.begin()->second;
  Reclaim reclaim = std::move(victim.reclaim);
  forget(victim);
  victim.reclaimed = true;
  ++reclaimed_;
  return reclaim;
}

// Takes `entry` off the counts and the idle orders.
void ConnectionLimiter::forget(Entry& entry) {
  unlistIdle(entry);
  --total_;
  const auto it = addresses_.find(entry.address);
  if (it != addresses_.end() && --it->second.open == 0) addresses_.erase(it);
}

void ConnectionLimiter::unlistIdle(Entry& entry) {
  if (entry.idle_since == 0) return;
  idle_.erase(entry.idle_since);
  const auto it = addresses_.find(entry.address);
  if (it != addresses_.end()) it->second.idle.erase(entry.idle_since);
  entry.idle_since = 0;
}

void ConnectionLimiter::markIdle(Entry& entry, Reclaim reclaim) {
  std::lock_guard lock(mutex_);
  if (entry.reclaimed) return;
  unlistIdle(entry);
  entry.idle_since = next_idle_key_++;
  entry.reclaim = std::move(reclaim);
  idle_.emplace(entry.idle_since, &entry);
  addresses_[entry.address].idle.emplace(entry.idle_since, &entry);
}

bool ConnectionLimiter::markBusy(Entry& entry) {
  Reclaim dropped;  // destroyed outside the lock
  std::lock_guard lock(mutex_);
  if (entry.reclaimed) return false;
  unlistIdle(entry);
  dropped = std::move(entry.reclaim);
  return true;
}

void ConnectionLimiter::release(Entry& entry) noexcept {
  std::lock_guard lock(mutex_);
  if (!entry.reclaimed) forget(entry);
}

std::size_t ConnectionLimiter::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::size_t ConnectionLimiter::fromAddress(const std::string& address) const {
  std::lock_guard lock(mutex_);
  const auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : it->second.open;
}

std::size_t ConnectionLimiter::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

std::uint64_t ConnectionLimiter::reclaimed() const {
  std::lock_guard lock(mutex_);
  return reclaimed_;
}

ConnectionBounds defaultConnectionBounds(std::uint64_t open_files) noexcept {
  if (open_files == 0) return {256, 128};
  const auto total = static_cast<std::size_t>(
      std::clamp<std::uint64_t>(open_files / 2, 2, kMaxDefaultConnections));
  return {total, total / 2};
}

}  // namespace transport
