// Server-wide notices for the clients of calls in flight, e.g. "this server is shutting down".
// A running tools/call listens (RAII) for as long as it runs; announce() reaches every listener
// once, and a call that starts after an announcement hears it at once. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace mcp {

class Announcements {
 public:
  using Listener = std::function<void(const std::string& text)>;

  class Subscription {
   public:
    Subscription(Announcements* owner, std::uint64_t id) noexcept : owner_(owner), id_(id) {}
    Subscription(Subscription&& other) noexcept : owner_(other.owner_), id_(other.id_) {
      other.owner_ = nullptr;
    }
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    Subscription& operator=(Subscription&&) = delete;
    // Waits for an announce() that is calling this listener: after it, the listener is never
    // called again (it may refer to a request that is about to end).
    ~Subscription() {
      if (owner_ == nullptr) return;
      const std::lock_guard lock(owner_->mutex_);
      owner_->listeners_.erase(id_);
    }

   private:
    Announcements* owner_;
    std::uint64_t id_;
  };

  // Tells `listener` the current notice, if any, then every later one until the subscription
  // goes. Listeners run under this object's lock, on the announcing thread (or this one): they
  // must be quick and must not call back into it.
  [[nodiscard]] Subscription listen(Listener listener) {
    const std::lock_guard lock(mutex_);
    const std::uint64_t id = ++next_id_;
    if (notice_) listener(*notice_);
    listeners_.emplace(id, std::move(listener));
    return {this, id};
  }

  // Listeners now: the tools/call requests running.
  [[nodiscard]] std::size_t listening() {
    const std::lock_guard lock(mutex_);
    return listeners_.size();
  }

  void announce(std::string text) {
    const std::lock_guard lock(mutex_);
    notice_ = std::move(text);
    for (const auto& [id, listener] : listeners_) listener(*notice_);
  }

 private:
  std::mutex mutex_;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, Listener> listeners_;
  std::optional<std::string> notice_;
};

}  // namespace mcp
