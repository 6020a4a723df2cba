// MCP sessions of the HTTP transport: Mcp-Session-Id -> Endpoint, with idle expiry.
// Thread-safe: every member may be called from any thread; a Lease may outlive the registry.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "jsonrpc/endpoint.h"

namespace transport {

// 128 bits from the kernel CSPRNG (getrandom), as 32 lower-case hex digits.
// Throws std::system_error if the kernel cannot supply randomness.
[[nodiscard]] std::string newSessionId(const std::string& route_tag = {});

class SessionRegistry {
 public:
  using Clock = std::chrono::steady_clock;

 private:
  struct Entry {
    std::shared_ptr<jsonrpc::Endpoint> endpoint;
    std::string principal;       // who opened it: only they reach it
    bool is_mcp_session = true;  // false: a principal's stateless endpoint (not counted)
    std::mutex mutex;
    std::size_t active = 0;  // requests currently using the session
    Clock::time_point last_used;
  };

 public:
  // Keeps a session from expiring while a request uses it; refreshes its idle clock on release.
  class Lease {
   public:
    explicit Lease(std::shared_ptr<Entry> entry) noexcept : entry_(std::move(entry)) {}
    ~Lease();
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    [[nodiscard]] const std::shared_ptr<jsonrpc::Endpoint>& endpoint() const noexcept {
      return entry_->endpoint;
    }
    // Leases of the session alive now, this one included: its requests in flight.
    [[nodiscard]] std::size_t inFlight() const {
      std::lock_guard lock(entry_->mutex);
      return entry_->active;
    }

   private:
    std::shared_ptr<Entry> entry_;
  };

  // Keeps the session of `principal` unless `max_sessions` (0: no bound) are open already;
  // false: not kept.
  bool add(const std::string& id, const std::string& principal,
           std::shared_ptr<jsonrpc::Endpoint> endpoint, Clock::time_point now,
           std::size_t max_sessions = 0);
  // Keeps the endpoint of `principal`'s stateless (2026-07-28) requests under `id`: no MCP
  // session, so neither bounded by max_sessions nor counted by size().
  void addPrincipalEndpoint(const std::string& id, const std::string& principal,
                            std::shared_ptr<jsonrpc::Endpoint> endpoint, Clock::time_point now);
  // nullopt for an unknown or expired id, or one another principal opened.
  [[nodiscard]] std::optional<Lease> acquire(const std::string& id, const std::string& principal,
                                             Clock::time_point now);
  // Forgets `principal`'s session and returns its endpoint (for the caller to close), or nullptr.
  [[nodiscard]] std::shared_ptr<jsonrpc::Endpoint> remove(const std::string& id,
                                                          const std::string& principal);
  // Forgets sessions unused for `idle_timeout` and not in use; returns their endpoints.
  [[nodiscard]] std::vector<std::shared_ptr<jsonrpc::Endpoint>> takeIdle(
      Clock::time_point now, Clock::duration idle_timeout);
  // Forgets every session; returns their endpoints.
  [[nodiscard]] std::vector<std::shared_ptr<jsonrpc::Endpoint>> takeAll();
  // MCP sessions open (principals' endpoints are not counted).
  [[nodiscard]] std::size_t size() const;

 private:
  [[nodiscard]] std::size_t mcpSessionsLocked() const;

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> sessions_;
};

}  // namespace transport
