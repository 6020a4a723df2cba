#include "mcp/session_lanes.h"

#include <algorithm>

namespace mcp {

SessionLanes::Place SessionLanes::enqueue(const std::string& key) {
  if (key.empty()) return Place();
  std::lock_guard lock(mutex_);
  const std::uint64_t number = next_number_++;
  lines_[key].push_back(number);
  return Place(this, key, number);
}

std::size_t SessionLanes::lineCount() {
  std::lock_guard lock(mutex_);
  return lines_.size();
}

bool SessionLanes::Place::waitTurn(CancelToken& cancel) {
  if (lanes_ == nullptr) return !cancel.cancelled();
  SessionLanes& lanes = *lanes_;
  // Takes the mutex so the wake-up cannot fall between the check and the wait.
  CancelSubscription wake(cancel, [&lanes] {
    std::lock_guard lock(lanes.mutex_);
    lanes.moved_.notify_all();
  });
  {
    std::unique_lock lock(lanes.mutex_);
    lanes.moved_.wait(
        lock, [&] { return cancel.cancelled() || lanes.lines_.at(key_).front() == number_; });
    if (lanes.lines_.at(key_).front() == number_ && !cancel.cancelled()) return true;
  }
  leave();
  return false;
}

void SessionLanes::Place::leave() noexcept {
  if (lanes_ == nullptr) return;
  {
    std::lock_guard lock(lanes_->mutex_);
    const auto it = lanes_->lines_.find(key_);
    if (it != lanes_->lines_.end()) {
      auto& line = it->second;
      line.erase(std::remove(line.begin(), line.end(), number_), line.end());
      if (line.empty()) lanes_->lines_.erase(it);
    }
  }
  lanes_->moved_.notify_all();
  lanes_ = nullptr;
}

}  // namespace mcp
