// The live sessions: finds them by (owner, id), creates missing ones through its SessionFactory,
// enforces the session limits (server-wide and per client) and the execution quotas, remembers
// sandboxes that were lost, expires idle sessions and tears everything down on shutdown.
// Thread-safe: all public methods may be called concurrently. Sandbox creation runs outside the
// lock, so one slow creation never blocks calls to other sessions.
#pragma once

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
#include "server/client_quota.h"
#include "server/execution_slots.h"
#include "server/lost_sessions.h"
#include "server/session.h"
#include "server/session_factory.h"

namespace server {

class SessionRegistry {
 public:
  SessionRegistry(const config::ServerConfig& config, std::unique_ptr<SessionFactory> factory);
  ~SessionRegistry();  // shutdown()
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

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
  // `cancel` (the calling request's) stops a creation it started, e.g. a Dockerfile build.
  Acquired acquire(const std::string& owner, const std::string& id, const SessionOptions& options,
                   bool options_given, CancelToken* cancel = nullptr);

  // What find() does with a session whose sandbox is still being created (an image build can
  // take minutes): wait for it, or refuse at once (a request that must not hold its thread).
  enum class IfStarting { kWait, kRefuse };

  // The owner's existing session, or a SandboxError telling how to create one. A session whose
  // sandbox has died is forgotten (remembered as lost) and reported as a SandboxError.
  [[nodiscard]] std::shared_ptr<Session> find(const std::string& owner, const std::string& id,
                                              IfStarting if_starting = IfStarting::kWait);

  // Destroys the owner's session; false when it did not exist.
  bool remove(const std::string& owner, const std::string& id);
  // The owner's sessions, oldest first (those still being created are left out).
  [[nodiscard]] std::vector<std::shared_ptr<Session>> list(const std::string& owner);
  // Destroys every session of the owner (its connection closed).
  void closeOwner(const std::string& owner);
  // Destroys the owner's session after its sandbox died, so the id can start fresh; the next
  // acquire() of the id reports `reason` (default: the sandbox's stop reason) as lost_reason.
  void forget(const std::shared_ptr<Session>& session, std::string reason = {});

  [[nodiscard]] std::size_t size();
  // Lets every session's MCP sidecar count what it decided since the last call (the metrics).
  void refreshSidecarCounts();
  // Stops creations under way (builds) and the factory's warm pool, then destroys every session;
  // acquire() refuses from now on.
  void shutdown();

  // One of the server's execution.max_concurrent slots and one of the owner's
  // execution.max_concurrent_per_client, held for the life of the returned guard; throws a
  // "busy" SandboxError naming the limit when either is used up.
  [[nodiscard]] ExecutionClaim claimExecutionSlot(const std::string& owner);
  [[nodiscard]] ExecutionSlots& executionSlots() noexcept { return slots_; }
  [[nodiscard]] SessionFactory& factory() noexcept { return *factory_; }

  // Validates a caller-chosen session id (letters, digits, "-", "_", ".", 1-64 chars).
  [[nodiscard]] static std::optional<std::string> checkSessionId(const std::string& id);

 private:
  using Pending = std::shared_future<std::shared_ptr<Session>>;

  [[nodiscard]] static std::string key(const std::string& owner, const std::string& id) {
    return owner + '\n' + id;
  }
  // Sessions (created or being created) the owner holds; mutex_ held.
  [[nodiscard]] std::size_t ownedCount(const std::string& owner) const;
  void reapLoop();
  std::vector<std::shared_ptr<Session>> takeIdle();

  const config::ServerConfig& config_;
  const std::unique_ptr<SessionFactory> factory_;

  std::mutex mutex_;
  std::condition_variable wake_reaper_;
  bool stopping_ = false;
  std::unordered_map<std::string, Pending> sessions_;
  LostSessions lost_;
  ExecutionSlots slots_;
  ClientQuota client_executions_;
  std::thread reaper_;
};

}  // namespace server
