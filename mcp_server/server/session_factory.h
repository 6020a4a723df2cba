// Turns SessionOptions into a live Session: the sandbox spec from the operator's config, the image
// (default, an allowed custom one, or a model's Dockerfile built under the image policy), volumes,
// the MCP relay (McpGateway) when the options carry an mcp_allowlist, and a warm sandbox from the
// pool when the options allow one. A build stops when the call that asked for it is cancelled or
// the server stops (cancelCreations()); once stopping, no sandbox is started. Knows nothing of
// owners, limits or which sessions exist: that is SessionRegistry's.
// Thread-safe: create() may run concurrently (each call blocks on the engine, outside any lock).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/cancel_token.h"
#include "config/config.h"
#include "sandbox/backend.h"
#include "sandbox/runtime_dir.h"
#include "sandbox/sidecar.h"
#include "sandbox/snapshot_store.h"
#include "server/server_endpoints.h"
#include "server/session.h"
#include "server/session_metrics.h"
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
  // Counts refusals and creation times (GET /metrics); null: nothing is counted.
  const SessionMetrics* metrics = nullptr;
  // How long the warm pool waits for a client (warmUp()) before its first fill (WarmPoolOptions).
  std::chrono::milliseconds pool_start_delay{0};
  // Names this server's snapshots (sessions.snapshot_dir/<instance_id>); empty: "default".
  std::string instance_id;
};

class SessionFactory {
 public:
  // Starts the warm pool when config.pool.size > 0.
  SessionFactory(const config::ServerConfig& config, sandbox::Backend& backend,
                 SessionServices services = {});
  ~SessionFactory();  // stop()
  SessionFactory(const SessionFactory&) = delete;
  SessionFactory& operator=(const SessionFactory&) = delete;

  // A new session `id` of `owner` with `options`; throws sandbox::SandboxError with text that
  // says what to change (image not allowed, Dockerfile off, no sidecar, engine errors, the
  // server shutting down). `cancel`, when given, is the asking call's: its firing stops a
  // Dockerfile build under way ("cancelled: ...") and no sandbox is started for it.
  [[nodiscard]] std::shared_ptr<Session> create(const std::string& owner, const std::string& id,
                                                const SessionOptions& options,
                                                CancelToken* cancel = nullptr);

  // A new session `id` of `owner` that carries on from the store's sealed snapshot `snapshot_id`
  // of a session made with `options`: the same image, limits and policy (a relay of its own when
  // it has an mcp_allowlist), the state copied. Its random generators are seeded anew (a fork
  // shares its parent's memory). Throws SandboxError: the snapshot is another client's, another
  // runtime's, tampered with, or the engine failed.
  [[nodiscard]] std::shared_ptr<Session> restore(const std::string& owner, const std::string& id,
                                                 const SessionOptions& options,
                                                 const std::string& snapshot_id);

  // Session `paused.facts.session_id` of `paused.facts.owner`, paused in the store's sealed
  // snapshot `paused` by an earlier run of this server (sessions.persist), with `options` as this
  // server's config reads them from the snapshot's manifest: its first call restores it. Its
  // relay, if any, starts now. Throws SandboxError saying why it cannot come back (its image or
  // dockerfile no longer allowed, no store, the server stopping).
  [[nodiscard]] std::shared_ptr<Session> revive(const sandbox::SnapshotRecord& paused,
                                                const SessionOptions& options);
  // What a session's snapshots record about it for revive(): {"options": the arguments}.
  [[nodiscard]] static nlohmann::json sessionFacts(const SessionOptions& options);

  // Runtime new sandboxes get ("runsc" or "runc"), resolved once; throws when runsc is missing
  // and sandbox.allow_runc_fallback is off.
  [[nodiscard]] std::string resolveRuntime();
  // Where paused sessions' and named snapshots go; null when there are none here (no
  // checkpoints on this backend, or the directory unusable: said once in the log). Made on first
  // use.
  [[nodiscard]] sandbox::SnapshotStore* snapshotStore();
  // Why sandboxes cannot be frozen here (the backend's reason), or nullopt.
  [[nodiscard]] std::optional<std::string> freezeUnsupported() {
    return backend_.freezeUnsupported();
  }
  // Zeros when the pool is disabled (pool.size 0).
  [[nodiscard]] WarmPool::Stats poolStats();
  // A client is here: the warm pool starts filling if it was still waiting (pool_start_delay).
  void warmUp();
  // services.metrics, or one that counts nothing.
  [[nodiscard]] const SessionMetrics& metrics() const noexcept;
  // Stops the warm pool and destroys its ready sandboxes; create() then always starts cold.
  void stop() noexcept;
  // The server is stopping (a drain past shutdown.grace_s, or shutdown): builds under way stop
  // at once and every create() from now on is refused, also one whose build just finished.
  // (The warm pool is stop()'s.)
  void cancelCreations() noexcept;

 private:
  // Image builds running at once, server-wide (each runs gVisor steps and writes image layers).
  static constexpr int kMaxConcurrentBuilds = 2;
  class BuildSlot;

  [[nodiscard]] std::string resolveImage(const SessionOptions& options, CancelToken* cancel);
  // The image's facts when the operator's image policy allows it; else a SandboxError saying
  // what the operator must configure. `what` names the argument ("image", "dockerfile FROM").
  sandbox::ImageFacts checkImageAllowed(const std::string& image, const std::string& what);
  // Parses, checks and builds a model's Dockerfile (sandbox.allow_dockerfile only); stops when
  // `cancel` (if any) fires or the server stops.
  [[nodiscard]] std::string buildImage(const std::string& dockerfile, CancelToken* cancel);
  // Throws "the server is shutting down" once cancelCreations() ran, "cancelled" once `cancel`
  // fired: nothing may start then.
  void refuseToStart(const CancelToken* cancel) const;
  // Throws SandboxError when the operator's config no longer allows the image `options` name,
  // or its dockerfile (a session coming back must not outlive a narrowed config).
  void checkStillAllowed(const SessionOptions& options);
  [[nodiscard]] sandbox::Limits baseLimits() const;
  // The spec every session with these options gets, before session-specific labels and mounts.
  // `image` non-empty: use it as it is (a restore names the image id that ran).
  [[nodiscard]] sandbox::SandboxSpec baseSpec(const SessionOptions& options,
                                              CancelToken* cancel = nullptr,
                                              const std::string& image = {});
  [[nodiscard]] std::unique_ptr<McpGateway> openGateway(const std::string& id,
                                                        const SessionOptions& options);

  const config::ServerConfig& config_;
  sandbox::Backend& backend_;
  const SessionServices services_;

  std::mutex runtime_mutex_;
  std::optional<std::string> runtime_;  // resolved once, on first use
  std::atomic<int> running_builds_{0};
  CancelToken stopping_;            // fired by cancelCreations(); every build subscribes to it
  std::unique_ptr<WarmPool> pool_;  // null when pool.size is 0
  std::mutex store_mutex_;
  bool store_tried_ = false;
  std::unique_ptr<sandbox::SnapshotStore> store_;
};

}  // namespace server
