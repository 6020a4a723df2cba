// Bounds on open HTTP connections: in total and per peer address. At a bound, the connection that
// has waited longest for a request to begin (an idle keep-alive connection, or a new one that has
// sent nothing yet) is reclaimed: asked to close, its place handed to the newcomer. Only when
// every connection in the way holds a request is the newcomer refused (a short 503, then close).
// So idle connections, however many, cannot lock a client out, and one address cannot hold every
// place with requests.
// Thread-safe: tryAcquire(), the Slot's marks and its destructor may run on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace transport {

class ConnectionLimiter : public std::enable_shared_from_this<ConnectionLimiter> {
  struct Entry;

 public:
  // Asks an idle connection to close. Called at most once, without the limiter's lock, on the
  // thread admitting the newcomer: it must only post the close to the connection's own strand.
  using Reclaim = std::function<void()>;

  // Holds one connection's place; gives it back when destroyed. Move-only.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept = default;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }

    // The connection waits for a request to begin and holds none: it may be reclaimed.
    void markIdle(Reclaim reclaim);
    // A request's first bytes arrived: it is no longer reclaimable. false: it was reclaimed
    // already (its place is gone; close the connection).
    [[nodiscard]] bool markBusy();

   private:
    friend class ConnectionLimiter;
    Slot(std::shared_ptr<ConnectionLimiter> owner, std::unique_ptr<Entry> entry);
    void release() noexcept;

    std::shared_ptr<ConnectionLimiter> owner_;
    std::unique_ptr<Entry> entry_;  // its address is what the limiter's idle lists hold
  };

  // 0 means no bound.
  ConnectionLimiter(std::size_t max_total, std::size_t max_per_address)
      : max_total_(max_total), max_per_address_(max_per_address) {}

  // A slot for a new connection from `address` (an IP address without port), reclaiming the
  // longest-idle connection when a bound is reached; or nullopt with `refusal` saying which bound
  // holds only busy connections. Create the limiter through std::make_shared.
  [[nodiscard]] std::optional<Slot> tryAcquire(const std::string& address, std::string& refusal);

  [[nodiscard]] std::size_t total() const;
  [[nodiscard]] std::size_t fromAddress(const std::string& address) const;
  [[nodiscard]] std::size_t idle() const;
  [[nodiscard]] std::uint64_t reclaimed() const;  // since start

 private:
  using IdleOrder = std::map<std::uint64_t, Entry*>;  // oldest first

  struct Entry {
    std::string address;
    std::uint64_t idle_since = 0;  // 0: busy; else its key in the idle orders
    bool reclaimed = false;        // its place was handed on; release() gives back nothing
    Reclaim reclaim;
  };
  struct AddressState {
    std::size_t open = 0;
    IdleOrder idle;
  };

  // All under mutex_.
  [[nodiscard]] Reclaim reclaimOldest(const IdleOrder& order);
  void forget(Entry& entry);
  void unlistIdle(Entry& entry);

  void markIdle(Entry& entry, Reclaim reclaim);
  [[nodiscard]] bool markBusy(Entry& entry);
  void release(Entry& entry) noexcept;

  const std::size_t max_total_;
  const std::size_t max_per_address_;
  mutable std::mutex mutex_;
  std::size_t total_ = 0;
  std::uint64_t next_idle_key_ = 1;
  std::uint64_t reclaimed_ = 0;
  IdleOrder idle_;
  std::unordered_map<std::string, AddressState> addresses_;
};

// Default bounds for a process allowed `open_files` descriptors: half of them for connections
// (the rest for sandbox channels, engine connections and files), at most
// kMaxDefaultConnections (an idle connection holds tens of KiB); per address half of that, so one
// address cannot hold every place with requests. 0 (unknown): 256 and 128.
struct ConnectionBounds {
  std::size_t total;
  std::size_t per_address;
};
inline constexpr std::size_t kMaxDefaultConnections = 8192;
[[nodiscard]] ConnectionBounds defaultConnectionBounds(std::uint64_t open_files) noexcept;

}  // namespace transport
