// One sandbox session: a live Sandbox plus the options it was created with and its counters.
// Thread-safe: counters are atomic, the options are immutable, Sandbox is thread-safe itself.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/egress.h"
#include "policy/policy.h"
#include "sandbox/backend.h"
#include "sandbox/pausable_sandbox.h"
#include "server/mcp_gateway.h"
#include "server/resource_events.h"

namespace server {

// What a call may ask of a session; fixed when the session is created.
struct SessionOptions {
  std::string image;       // empty: the configured default
  std::string dockerfile;  // non-empty: build (cached by content hash) and use that image
  std::map<std::string, std::string> environment;
  std::vector<sandbox::VolumeMount> volumes;
  nlohmann::json mcp_allowlist = nlohmann::json::array();  // as the call gave it
  // What the session's relay enforces: mcp_allowlist narrowed by the operator's list. Null or
  // without rules: the session gets no relay and no /run/mcp.
  std::shared_ptr<const policy::Policy> mcp_policy;
  // What the session's egress proxy lets through (the operator's egress.allow and the profiles
  // the call picked, narrowed by the call). Null or without rules: no proxy.
  std::shared_ptr<const policy::EgressPolicy> egress_policy;
  // The option arguments as the call gave them (image, dockerfile, environment, volumes,
  // mcp_allowlist, egress): sealed into the session's snapshots, so that a server started again
  // (sessions.persist) checks them against its own config before it brings the session back.
  nlohmann::json arguments = nlohmann::json::object();
  // false: never frozen while idle (the session keeps time; sessions.freeze_after_idle_s).
  bool freeze = true;
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  Session(std::string id, std::string owner, SessionOptions options,
          std::unique_ptr<sandbox::Sandbox> sandbox, std::unique_ptr<McpGateway> gateway = nullptr);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] const std::string& id() const noexcept { return id_; }
  [[nodiscard]] const std::string& owner() const noexcept { return owner_; }
  [[nodiscard]] const SessionOptions& options() const noexcept { return options_; }
  // Resumes a paused sandbox on its first call (a restore), transparently.
  [[nodiscard]] sandbox::Sandbox& sandbox() noexcept { return *sandbox_; }
  // Checkpoints an idle sandbox to disk and removes its container; false when it cannot now
  // (in use, not pausable here, the checkpoint failed).
  bool pause();
  // Restores a paused sandbox now; throws SandboxError when that fails (the sandbox is then lost:
  // alive() false, stopReason() says why). Nothing to do when it runs.
  void resume();
  // A sealed snapshot of the running sandbox named `name` of `kind` (it runs on); throws
  // SandboxError.
  sandbox::SnapshotRecord snapshot(const std::string& name,
                                   const char* kind = sandbox::kSnapshotNamed);
  // Pauses the sandbox (if running) and keeps its snapshot after this goes, for a server started
  // again with sessions.persist; false when nothing could be kept.
  bool persist();
  // Back to the store's snapshot `snapshot_id`; throws SandboxError (nothing changed then).
  void rollBack(const std::string& snapshot_id);
  // Whether pause() can ever succeed (a store and checkpoints on this backend).
  [[nodiscard]] bool pausable() const noexcept;
  // Freezes an idle sandbox where it is (the frozen tier: no CPU, its memory kept; the next use
  // thaws it); false when it cannot now (in use, the session opted out, the backend cannot).
  bool freeze();
  [[nodiscard]] bool frozen() const noexcept { return sandbox_->frozen(); }
  // "running", "frozen", "paused" or "lost".
  [[nodiscard]] std::string_view state() const noexcept;
  // Whether its sandbox holds a container (running or frozen), as max_sessions counts.
  [[nodiscard]] bool resident() const noexcept;
  [[nodiscard]] bool paused() const noexcept;
  // Bytes the pause's snapshot holds on disk; 0 while running.
  [[nodiscard]] std::uint64_t snapshotBytes() const noexcept;
  // The session's MCP relay; nullptr when it was created without an mcp_allowlist.
  [[nodiscard]] McpGateway* mcpGateway() noexcept { return gateway_.get(); }
  [[nodiscard]] double createdAtUnix() const noexcept { return created_at_unix_; }
  [[nodiscard]] double uptimeSeconds() const noexcept;
  [[nodiscard]] double idleSeconds() const noexcept;
  [[nodiscard]] std::uint64_t executionCount() const noexcept { return executions_.load(); }
  // Whether the sandbox came ready from the warm pool (no container start for this session).
  [[nodiscard]] bool warmStart() const noexcept { return warm_start_; }
  void setWarmStart(bool warm) noexcept { warm_start_ = warm; }
  // Where rememberResource() and the end of a session that remembered files are told; set once,
  // before the session is shared.
  void setResourceEvents(std::shared_ptr<ResourceEvents> events) noexcept {
    events_ = std::move(events);
  }

  void countExecution() noexcept { executions_.fetch_add(1); }
  void touch() noexcept { last_used_ns_.store(Clock::now().time_since_epoch().count()); }
  // Marks the session busy so the idle reaper leaves it alone during long executions.
  void beginUse() noexcept;
  void endUse() noexcept;
  [[nodiscard]] bool inUse() const noexcept { return users_.load() > 0; }

  // Files the session's calls produced for the client (saved output, figures), as MCP Resource
  // objects for resources/list; the newest kMaxRecentResources are kept, newest first. A new
  // URI changes the owner's resource list (told to the ResourceEvents).
  void rememberResource(nlohmann::json resource);
  [[nodiscard]] std::vector<nlohmann::json> recentResources() const;
  static constexpr std::size_t kMaxRecentResources = 32;

 private:
  const std::string id_;
  const std::string owner_;
  const SessionOptions options_;
  std::unique_ptr<McpGateway> gateway_;  // declared first: outlives the sandbox that uses it
  std::unique_ptr<sandbox::Sandbox> sandbox_;
  sandbox::PausableSandbox* pausable_ = nullptr;  // sandbox_ when it is one
  const double created_at_unix_;
  const Clock::time_point created_;
  std::atomic<Clock::rep> last_used_ns_;
  std::atomic<std::uint64_t> executions_{0};
  std::atomic<int> users_{0};
  bool warm_start_ = false;                 // set once, before the session is shared
  std::shared_ptr<ResourceEvents> events_;  // set once, before the session is shared
  mutable std::mutex resources_mutex_;
  std::deque<nlohmann::json> recent_resources_;  // newest first
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
