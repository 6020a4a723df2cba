// Bounds on open HTTP connections: in total and per peer address. Past either bound a new
// connection is refused at once (a short 503, then close), so one client holding many idle or
// slow connections cannot use up the server's descriptors and lock every other client out.
// Thread-safe: tryAcquire() and the Slot destructor may run on any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace transport {

class ConnectionLimiter : public std::enable_shared_from_this<ConnectionLimiter> {
 public:
  // Holds one connection's place; gives it back when destroyed. Move-only.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept = default;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }

   private:
    friend class ConnectionLimiter;
    Slot(std::shared_ptr<ConnectionLimiter> owner, std::string address)
        : owner_(std::move(owner)), address_(std::move(address)) {}
    void release() noexcept;

    std::shared_ptr<ConnectionLimiter> owner_;
    std::string address_;
  };

  // 0 means no bound.
  ConnectionLimiter(std::size_t max_total, std::size_t max_per_address)
      : max_total_(max_total), max_per_address_(max_per_address) {}

  // A slot for a new connection from `address` (an IP address without port), or nullopt with
  // `refusal` saying which bound was reached. Create through std::make_shared.
  [[nodiscard]] std::optional<Slot> tryAcquire(const std::string& address, std::string& refusal);

  [[nodiscard]] std::size_t total() const;
  [[nodiscard]] std::size_t fromAddress(const std::string& address) const;

 private:
  void release(const std::string& address) noexcept;

  const std::size_t max_total_;
  const std::size_t max_per_address_;
  mutable std::mutex mutex_;
  std::size_t total_ = 0;
  std::unordered_map<std::string, std::size_t> per_address_;
};

}  // namespace transport
