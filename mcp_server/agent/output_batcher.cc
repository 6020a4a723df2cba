#include "agent/output_batcher.h"

#include <algorithm>

#include "common/utf8.h"

namespace agent {

std::optional<OutputBatcher::Clock::time_point> OutputBatcher::push(OutputStream stream,
                                                                    std::string_view chunk,
                                                                    Clock::time_point now) {
  if (chunk.empty()) return nextDue();
  if (pending_.empty() || pending_.back().stream != stream) {
    pending_.push_back({stream, {}});
  }
  pending_.back().data.append(chunk);
  pending_bytes_ += chunk.size();
  // Quiet for an interval (or never sent): no reason to wait. Too much waiting: send it now.
  if (!last_sent_ || now - *last_sent_ >= interval_ || pending_bytes_ >= max_event_bytes_) {
    flushAll();
    last_sent_ = now;
  }
  return nextDue();
}

std::optional<OutputBatcher::Clock::time_point> OutputBatcher::flushDue(Clock::time_point now) {
  if (!pending_.empty() && (!last_sent_ || now - *last_sent_ >= interval_)) {
    flushAll();
    last_sent_ = now;
  }
  return nextDue();
}

void OutputBatcher::flushAll() {
  auto pending = std::move(pending_);
  pending_.clear();
  pending_bytes_ = 0;
  for (const auto& entry : pending) send(entry.stream, entry.data);
}

void OutputBatcher::send(OutputStream stream, std::string_view data) {
  while (!data.empty()) {
    std::size_t take = std::min(data.size(), max_event_bytes_);
    // Cut between characters: a prefix that ends inside one is shortened to its start.
    if (take < data.size()) {
      const std::size_t whole = common::completeUtf8PrefixLength(data.substr(0, take));
      if (whole > 0) take = whole;
    }
    send_(stream, std::string(data.substr(0, take)));
    ++events_sent_;
    data.remove_prefix(take);
  }
}

std::optional<OutputBatcher::Clock::time_point> OutputBatcher::nextDue() const {
  if (pending_.empty()) return std::nullopt;
  return last_sent_ ? *last_sent_ + interval_ : Clock::time_point{};
}

}  // namespace agent
