// One sandbox session: a live Sandbox plus the options it was created with and its counters.
// Thread-safe: counters are atomic, the options are immutable, Sandbox is thread-safe itself.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/backend.h"

namespace server {

// What a call may ask of a session; fixed when the session is created.
struct SessionOptions {
  std::string image;       // empty: the configured default
  std::string dockerfile;  // non-empty: build (cached by content hash) and use that image
  std::map<std::string, std::string> environment;
  std::vector<sandbox::VolumeMount> volumes;
  std::vector<std::string> mcp_allowlist;
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  Session(std::string id, std::string owner, SessionOptions options,
          std::unique_ptr<sandbox::Sandbox> sandbox);

  [[nodiscard]] const std::string& id() const noexcept { return id_; }
  [[nodiscard]] const std::string& owner() const noexcept { return owner_; }
  [[nodiscard]] const SessionOptions& options() const noexcept { return options_; }
  [[nodiscard]] sandbox::Sandbox& sandbox() noexcept { return *sandbox_; }
  [[nodiscard]] double createdAtUnix() const noexcept { return created_at_unix_; }
  [[nodiscard]] double uptimeSeconds() const noexcept;
  [[nodiscard]] double idleSeconds() const noexcept;
  [[nodiscard]] std::uint64_t executionCount() const noexcept { return executions_.load(); }

  void countExecution() noexcept { executions_.fetch_add(1); }
  void touch() noexcept { last_used_ns_.store(Clock::now().time_since_epoch().count()); }
  // Marks the session busy so the idle reaper leaves it alone during long executions.
  void beginUse() noexcept;
  void endUse() noexcept;
  [[nodiscard]] bool inUse() const noexcept { return users_.load() > 0; }

 private:
  const std::string id_;
  const std::string owner_;
  const SessionOptions options_;
  std::unique_ptr<sandbox::Sandbox> sandbox_;
  const double created_at_unix_;
  const Clock::time_point created_;
  std::atomic<Clock::rep> last_used_ns_;
  std::atomic<std::uint64_t> executions_{0};
  std::atomic<int> users_{0};
};

// Keeps a session marked in use for a scope.
class SessionUse {
 public:
  explicit SessionUse(std::shared_ptr<Session> session) : session_(std::move(session)) {
    session_->beginUse();
  }
  ~SessionUse() { session_->endUse(); }
  SessionUse(const SessionUse&) = delete;
  SessionUse& operator=(const SessionUse&) = delete;
  Session* operator->() const noexcept { return session_.get(); }
  Session& operator*() const noexcept { return *session_; }

 private:
  std::shared_ptr<Session> session_;
};

}  // namespace server
