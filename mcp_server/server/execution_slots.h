// A fixed number of slots for executions running at once, server-wide. Claiming never waits: a
// caller past the limit is told "busy" at once rather than queued behind work of unknown length.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>

namespace server {

class ExecutionSlots {
 public:
  explicit ExecutionSlots(std::size_t capacity) : capacity_(capacity) {}
  ExecutionSlots(const ExecutionSlots&) = delete;
  ExecutionSlots& operator=(const ExecutionSlots&) = delete;

  // Gives its slot back when destroyed.
  class Slot {
   public:
    explicit Slot(ExecutionSlots* owner) noexcept : owner_(owner) {}
    Slot(Slot&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() {
      if (owner_ != nullptr) owner_->in_use_.fetch_sub(1);
    }

   private:
    ExecutionSlots* owner_;
  };

  [[nodiscard]] std::optional<Slot> tryClaim() noexcept {
    std::size_t current = in_use_.load();
    do {
      if (current >= capacity_) return std::nullopt;
    } while (!in_use_.compare_exchange_weak(current, current + 1));
    return std::optional<Slot>(std::in_place, this);
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t inUse() const noexcept { return in_use_.load(); }

 private:
  const std::size_t capacity_;
  std::atomic<std::size_t> in_use_{0};
};

}  // namespace server
