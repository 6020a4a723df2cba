// Owns every session: creates them through the Backend, finds them by (owner, id), enforces the
// session limit, expires idle ones and tears everything down on shutdown.
// Thread-safe: all public methods may be called concurrently. Sandbox creation runs outside the
// lock, so one slow creation never blocks calls to other sessions.
#pragma once

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "sandbox/backend.h"
#include "sandbox/runtime_dir.h"
#include "sandbox/sidecar.h"
#include "server/client_quota.h"
#include "server/execution_slots.h"
#include "server/lost_sessions.h"
#include "server/server_endpoints.h"
#include "server/session.h"
#include "server/warm_pool.h"

namespace server {

// What sessions with an mcp_allowlist need besides the backend. Without a launcher, such
// sessions are refused with an explanation; without python_helper_dir, no helper is mounted.
struct SessionServices {
  sandbox::SidecarLauncher* sidecars = nullptr;
  sandbox::RuntimeDir* runtime_dir = nullptr;
  std::string python_helper_dir;  // host directory holding sandbox_mcp.py
  // The server's own listeners, which no session's relay may reach; null: none (stdio).
  std::shared_ptr<const ServerEndpoints> server_endpoints;
};

class SessionManager {
 public:
  SessionManager(const config::ServerConfig& config, sandbox::Backend& backend,
                 SessionServices services = {});
  ~SessionManager();
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  struct Acquired {
    std::shared_ptr<Session> session;
    bool created = false;
    // Set when this id's previous sandbox was lost (it died or its channel broke) and `session`
    // is a fresh one: why it was lost. The caller must tell the user (state_lost + a warning).
    std::optional<std::string> lost_reason;
  };

  // Returns the owner's session `id`, creating it (with `options`) when it does not exist yet.
  // An empty id creates a session with a fresh id. Options passed for an existing session must
  // match the ones it was created with. Throws sandbox::SandboxError with actionable text.
  Acquired acquire(const std::string& owner, const std::string& id, const SessionOptions& options,
                   bool options_given);

  // The owner's existing session, or a SandboxError telling how to create one. A session whose
  // sandbox has died is forgotten (remembered as lost) and reported as a SandboxError.
  [[nodiscard]] std::shared_ptr<Session> find(const std::string& owner, const std::string& id);

  // Destroys the owner's session; false when it did not exist.
  bool remove(const std::string& owner, const std::string& id);
  [[nodiscard]] std::vector<std::shared_ptr<Session>> list(const std::string& owner);
  void closeOwner(const std::string& owner);
  // Destroys the owner's session after its sandbox died, so the id can start fresh; the next
  // acquire() of the id reports `reason` (default: the sandbox's stop reason) as lost_reason.
  void forget(const std::shared_ptr<Session>& session, std::string reason = {});

  [[nodiscard]] std::size_t size();
  // Runtime new sandboxes get ("runsc" or "runc"); throws when runsc is missing and
  // sandbox.allow_runc_fallback is off.
  [[nodiscard]] std::string resolveRuntime();
  void shutdown();

  // One of the server's execution.max_concurrent slots and one of the owner's
  // execution.max_concurrent_per_client, held for the life of the returned guard; throws a
  // "busy" SandboxError naming the limit when either is used up.
  [[nodiscard]] ExecutionClaim claimExecutionSlot(const std::string& owner);
  [[nodiscard]] ExecutionSlots& executionSlots() noexcept { return slots_; }
  // Zeros when the pool is disabled (pool.size 0).
  [[nodiscard]] WarmPool::Stats poolStats();

  // Validates a caller-chosen session id (letters, digits, "-", "_", ".", 1-64 chars).
  [[nodiscard]] static std::optional<std::string> checkSessionId(const std::string& id);

 private:
  // Image builds running at once, server-wide (each runs gVisor steps and writes image layers).
  static constexpr int kMaxConcurrentBuilds = 2;
  // One place among the running builds, held for the scope; acquired() false when none was free.
  class BuildSlot {
   public:
    explicit BuildSlot(std::atomic<int>& running) : running_(running) {
      acquired_ = running_.fetch_add(1) < kMaxConcurrentBuilds;
      if (!acquired_) running_.fetch_sub(1);
    }
    ~BuildSlot() {
      if (acquired_) running_.fetch_sub(1);
    }
    BuildSlot(const BuildSlot&) = delete;
    BuildSlot& operator=(const BuildSlot&) = delete;
    [[nodiscard]] bool acquired() const noexcept { return acquired_; }

   private:
    std::atomic<int>& running_;
    bool acquired_ = false;
  };

  using Pending = std::shared_future<std::shared_ptr<Session>>;

  [[nodiscard]] static std::string key(const std::string& owner, const std::string& id) {
    return owner + '\n' + id;
  }
  std::shared_ptr<Session> createSession(const std::string& owner, const std::string& id,
                                         const SessionOptions& options);
  [[nodiscard]] std::string resolveImage(const SessionOptions& options);
  // The image's facts when the operator's image policy allows it; else a SandboxError saying
  // what the operator must configure. `what` names the argument ("image", "dockerfile FROM").
  sandbox::ImageFacts checkImageAllowed(const std::string& image, const std::string& what);
  // Parses, checks and builds a model's Dockerfile (sandbox.allow_dockerfile only).
  [[nodiscard]] std::string buildImage(const std::string& dockerfile);
  [[nodiscard]] sandbox::Limits baseLimits() const;
  // The spec every session with these options gets, before session-specific labels and mounts.
  [[nodiscard]] sandbox::SandboxSpec baseSpec(const SessionOptions& options);
  [[nodiscard]] std::unique_ptr<McpGateway> openGateway(const std::string& id,
                                                        const SessionOptions& options);
  // Sessions (created or being created) the owner holds; mutex_ held.
  [[nodiscard]] std::size_t ownedCount(const std::string& owner) const;
  void reapLoop();
  std::vector<std::shared_ptr<Session>> takeIdle();

  const config::ServerConfig& config_;
  sandbox::Backend& backend_;
  SessionServices services_;

  std::mutex mutex_;
  std::condition_variable wake_reaper_;
  bool stopping_ = false;
  std::unordered_map<std::string, Pending> sessions_;
  std::optional<std::string> runtime_;  // resolved once, on first use
  LostSessions lost_;
  std::atomic<int> running_builds_{0};
  ExecutionSlots slots_;
  ClientQuota client_executions_;
  std::unique_ptr<WarmPool> pool_;  // null when pool.size is 0
  std::thread reaper_;
};

}  // namespace server
