// A one-shot cancellation flag with callbacks. Thread-safe: cancel() may race with subscribe().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

class CancelToken {
 public:
  using Callback = std::function<void()>;

  CancelToken() = default;
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Runs every subscribed callback once, on the calling thread. Later calls do nothing.
  void cancel() {
    std::map<std::uint64_t, Callback> to_run;
    {
      std::lock_guard lock(mutex_);
      if (cancelled_.exchange(true)) return;
      to_run.swap(callbacks_);
    }
    for (auto& [key, cb] : to_run) cb();
  }

  [[nodiscard]] bool cancelled() const noexcept { return cancelled_.load(); }

  // Registers cb; when already cancelled it runs immediately. Returns a key for unsubscribe().
  std::uint64_t subscribe(Callback cb) {
    {
      std::lock_guard lock(mutex_);
      if (!cancelled_) {
        callbacks_.emplace(next_key_, std::move(cb));
        return next_key_++;
      }
    }
    cb();
    return 0;
  }

  void unsubscribe(std::uint64_t key) {
    std::lock_guard lock(mutex_);
    callbacks_.erase(key);
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> cancelled_{false};
  std::map<std::uint64_t, Callback> callbacks_;
  std::uint64_t next_key_ = 1;
};

// Unsubscribes on scope exit, so a callback never outlives the work it would interrupt.
class CancelSubscription {
 public:
  CancelSubscription(CancelToken& token, CancelToken::Callback cb)
      : token_(token), key_(token.subscribe(std::move(cb))) {}
  ~CancelSubscription() { token_.unsubscribe(key_); }
  CancelSubscription(const CancelSubscription&) = delete;
  CancelSubscription& operator=(const CancelSubscription&) = delete;

 private:
  CancelToken& token_;
  std::uint64_t key_;
};
