#include "mcp/session_lanes.h"

#include <algorithm>
#include <utility>

namespace mcp {

SessionLanes::Place SessionLanes::enqueue(const std::string& key) {
  if (key.empty()) return Place();
  std::lock_guard lock(mutex_);
  const std::uint64_t number = next_number_++;
  lines_[key].push_back({number, nullptr});
  return Place(this, key, number);
}

std::size_t SessionLanes::lineCount() {
  std::lock_guard lock(mutex_);
  return lines_.size();
}

bool SessionLanes::Place::isFirst() const {
  if (lanes_ == nullptr) return true;
  std::lock_guard lock(lanes_->mutex_);
  return lanes_->lines_.at(key_).front().number == number_;
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
    lanes.moved_.wait(lock, [&] {
      return cancel.cancelled() || lanes.lines_.at(key_).front().number == number_;
    });
    if (lanes.lines_.at(key_).front().number == number_ && !cancel.cancelled()) return true;
  }
  leave();
  return false;
}

void SessionLanes::Place::whenTurn(std::function<void()> go) {
  if (lanes_ != nullptr) {
    std::lock_guard lock(lanes_->mutex_);
    auto& line = lanes_->lines_.at(key_);
    if (line.front().number != number_) {
      for (auto& waiting : line) {
        if (waiting.number != number_) continue;
        waiting.go = std::move(go);
        break;
      }
      return;
    }
  }
  go();
}

void SessionLanes::Place::leave() noexcept {
  if (lanes_ == nullptr) return;
  std::function<void()> next;  // the new first place's whenTurn(), run outside the mutex
  {
    std::lock_guard lock(lanes_->mutex_);
    const auto it = lanes_->lines_.find(key_);
    if (it != lanes_->lines_.end()) {
      auto& line = it->second;
      const bool was_first = !line.empty() && line.front().number == number_;
      line.erase(std::remove_if(line.begin(), line.end(),
                                [this](const Waiting& w) { return w.number == number_; }),
                 line.end());
      if (line.empty()) {
        lanes_->lines_.erase(it);
      } else if (was_first) {
        next.swap(line.front().go);
      }
    }
  }
  lanes_->moved_.notify_all();
  lanes_ = nullptr;
  if (next) next();
}

}  // namespace mcp
