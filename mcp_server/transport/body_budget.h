// A bound on request-body bytes held by all HTTP connections at once. http.max_body_bytes bounds
// one request; without this, 256 connections could each hold 48 MiB (12 GiB) and any local
// process could push the server out of memory. A request pays for its body as the bytes
// arrive (never for a declared Content-Length alone); past the budget it gets a 503. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

namespace transport {

class BodyBudget : public std::enable_shared_from_this<BodyBudget> {
 public:
  // Holds bytes of the budget; gives them back when destroyed or reset. Move-only.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { reset(); }
    void reset() noexcept;
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

   private:
    friend class BodyBudget;
    Reservation(std::shared_ptr<BodyBudget> owner, std::size_t bytes)
        : owner_(std::move(owner)), bytes_(bytes) {}

    std::shared_ptr<BodyBudget> owner_;
    std::size_t bytes_ = 0;
  };

  explicit BodyBudget(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // `bytes` of the budget, or an empty reservation (bytes() == 0) when they would pass it. A
  // request of 0 bytes always succeeds. Create through std::make_shared.
  [[nodiscard]] bool tryReserve(std::size_t bytes, Reservation& out);
  // Grows `reservation` (possibly empty) to `total` bytes; false, leaving it as it was, when the
  // growth would pass the budget. Never shrinks it.
  [[nodiscard]] bool tryGrow(Reservation& reservation, std::size_t total);

  [[nodiscard]] std::size_t maxBytes() const noexcept { return max_bytes_; }
  [[nodiscard]] std::size_t inUse() const;

 private:
  void release(std::size_t bytes) noexcept;

  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
};

}  // namespace transport
