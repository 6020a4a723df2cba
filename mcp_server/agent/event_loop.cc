#include "agent/event_loop.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

namespace agent {

void EventLoop::watchFd(int fd, short events, FdCallback callback) {
  watches_[fd] = Watch{events, std::move(callback), next_generation_++};
}

void EventLoop::unwatchFd(int fd) noexcept { watches_.erase(fd); }

EventLoop::TimerId EventLoop::addTimer(std::chrono::milliseconds delay, TimerCallback callback) {
  const TimerId id = next_timer_id_++;
  timers_.emplace(id, Timer{Clock::now() + delay, std::move(callback)});
  return id;
}

void EventLoop::cancelTimer(TimerId id) noexcept { timers_.erase(id); }

int EventLoop::pollTimeoutMs() const {
  if (timers_.empty()) return -1;
  auto earliest = Clock::time_point::max();
  for (const auto& [id, timer] : timers_) earliest = std::min(earliest, timer.due);
  const auto now = Clock::now();
  if (earliest <= now) return 0;
  // Round up so a timer never fires a little early and forces an extra wake-up.
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - now);
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(wait.count(), 60'000));
}

void EventLoop::runDueTimers() {
  const auto now = Clock::now();
  std::vector<TimerId> due;
  for (const auto& [id, timer] : timers_) {
    if (timer.due <= now) due.push_back(id);
  }
  for (const TimerId id : due) {
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled by an earlier callback
    TimerCallback callback = std::move(it->second.callback);
    timers_.erase(it);
    callback();
    if (stopped_) return;
  }
}

void EventLoop::dispatchOnce() {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> generations;
  fds.reserve(watches_.size());
  for (const auto& [fd, watch] : watches_) {
    fds.push_back(pollfd{fd, watch.events, 0});
    generations.push_back(watch.generation);
  }
  const int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
  if (ready < 0) {
    if (errno == EINTR) return;
    throw std::system_error(errno, std::generic_category(), "poll");
  }
  for (std::size_t i = 0; i < fds.size() && ready > 0; ++i) {
    if (fds[i].revents == 0) continue;
    auto it = watches_.find(fds[i].fd);
    if (it == watches_.end() || it->second.generation != generations[i]) continue;
    FdCallback callback = it->second.callback;  // copy: the callback may unwatch itself
    callback(fds[i].revents);
    if (stopped_) return;
  }
  runDueTimers();
}

void EventLoop::run() {
  stopped_ = false;
  while (!stopped_) dispatchOnce();
}

}  // namespace agent
