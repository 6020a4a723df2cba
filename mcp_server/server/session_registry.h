// The live sessions: finds them by (owner, id), creates missing ones through its SessionFactory,
// enforces the session limits (server-wide and per client) and the execution quotas, remembers
// sandboxes that were lost, expires idle sessions and tears everything down on shutdown.
// Thread-safe: all public methods may be called concurrently. Sandbox creation runs outside the
// lock, so one slow creation never blocks calls to other sessions.
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "server/caller.h"
#include "server/client_quota.h"
#include "server/execution_slots.h"
#include "server/lost_sessions.h"
#include "server/preview_table.h"
#include "server/resource_events.h"
#include "server/session.h"
#include "server/session_factory.h"
#include "server/session_freezer.h"
#include "server/snapshot_catalog.h"

namespace server {

class SessionRegistry {
 public:
  // `route_tag` (the replica's instance id) ends every minted session id after a "~", so that a
  // front routes a call naming a session to the replica that holds it (deploy/haproxy.cfg).
  SessionRegistry(const config::ServerConfig& config, std::unique_ptr<SessionFactory> factory,
                  std::string route_tag = {});
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

  // An empty id creates a session (with `options`) under a fresh id: "s-", 128 random bits in hex
  // and "~<route_tag>", a capability nobody can guess. A given id must name one of the caller's
  // sessions, or one whose sandbox was lost (it gets a fresh sandbox under the same id, and says
  // so); any other id is an error that says the session is gone, never a new empty sandbox.
  // Options passed for an existing session must match the ones it was created with. Throws
  // sandbox::SandboxError with actionable text. `cancel` (the calling request's) stops a
  // creation it started, e.g. a Dockerfile build.
  Acquired acquire(const Caller& caller, const std::string& id, const SessionOptions& options,
                   bool options_given, CancelToken* cancel = nullptr);

  // What find() does with a session whose sandbox is still being created (an image build can
  // take minutes): wait for it, or refuse at once (a request that must not hold its thread).
  enum class IfStarting { kWait, kRefuse };

  // What find() does with a paused session: restore it (making room under max_sessions) before
  // it is used, or leave it paused (a request that only reads its counters).
  enum class IfPaused { kResume, kLeave };

  // The owner's existing session, or a SandboxError telling how to create one. A session whose
  // sandbox has died (or could not be restored) is forgotten (remembered as lost) and reported
  // as a SandboxError.
  [[nodiscard]] std::shared_ptr<Session> find(const std::string& owner, const std::string& id,
                                              IfStarting if_starting = IfStarting::kWait,
                                              IfPaused if_paused = IfPaused::kResume);

  // Destroys the owner's session; false when it did not exist.
  bool remove(const std::string& owner, const std::string& id);
  // The owner's sessions, oldest first (those still being created are left out).
  [[nodiscard]] std::vector<std::shared_ptr<Session>> list(const std::string& owner);
  // Destroys every session of the owner (its connection closed). With sessions.persist, an owner
  // that outlives the server (ownerOutlivesServer: stdio) keeps them for shutdown() to save.
  void closeOwner(const std::string& owner);
  // Destroys the owner's session after its sandbox died, so the id can start fresh; the next
  // acquire() of the id reports `reason` (default: the sandbox's stop reason) as lost_reason.
  void forget(const std::shared_ptr<Session>& session, std::string reason = {});

  // snapshot_session: checkpoints the owner's session (it runs on) into a snapshot named `name`
  // (replacing one of that name). Throws SandboxError: no such session, no snapshots here, the
  // owner's snapshot quota, busy.
  NamedSnapshot snapshot(const Caller& caller, const std::string& session_id,
                         const std::string& name);
  // fork_session: `count` new sessions of the caller that carry on from its session
  // `from_session` (checkpointed now) or its snapshot `from_snapshot` (exactly one is non-empty),
  // made side by side. Each counts against the session limits; a copy that cannot be made is
  // left out and the first such error is thrown when none could be.
  std::vector<std::shared_ptr<Session>> fork(const Caller& caller, const std::string& from_session,
                                             const std::string& from_snapshot, std::size_t count);
  // restore_session: the session goes back to its snapshot `name` (which stays).
  void rollBack(const Caller& caller, const std::string& session_id, const std::string& name);
  // The named snapshots; null when there are none on this server (no checkpoints here).
  [[nodiscard]] SnapshotCatalog* snapshots();
  // The catalog when one was made already (never makes one: no engine request).
  [[nodiscard]] SnapshotCatalog* existingCatalog();

  [[nodiscard]] std::size_t size();
  // Sessions by state now (GET /metrics), and the frozen tier's count of freezes since start.
  struct StateCounts {
    std::size_t running = 0;
    std::size_t frozen = 0;
    std::size_t paused = 0;
    std::uint64_t freezes = 0;
  };
  [[nodiscard]] StateCounts stateCounts();
  // Lets every session's MCP sidecar count what it decided since the last call (the metrics).
  void refreshSidecarCounts();
  // Stops creations under way (builds) and the factory's warm pool, then destroys every session;
  // acquire() refuses from now on. With sessions.persist, the sessions and named snapshots of
  // owners that outlive the server are saved first (paused; their snapshots kept for revive()).
  void shutdown();

  // Reads the option arguments sealed in a snapshot as this server's config allows them (the
  // tools' parser): throws SandboxError when they are not allowed any more.
  using OptionsReader = std::function<SessionOptions(const nlohmann::json& arguments)>;
  // sessions.persist: brings back what an earlier run of this instance saved: its paused sessions
  // (each restored on its next call) and named snapshots, of owners that outlive a server. A
  // session its options, image or the session limits no longer allow is not brought back: its
  // next call is told why (state_lost). Anything else left is removed. Returns the sessions
  // brought back; 0 without persist or snapshots.
  std::size_t revive(const OptionsReader& read_options);

  // One of the server's execution.max_concurrent slots and one of the caller's concurrent
  // executions, held for the life of the returned guard; throws a "busy" SandboxError naming the
  // limit when either is used up.
  [[nodiscard]] ExecutionClaim claimExecutionSlot(const Caller& caller);
  [[nodiscard]] ExecutionSlots& executionSlots() noexcept { return slots_; }
  [[nodiscard]] SessionFactory& factory() noexcept { return *factory_; }
  // Where the sessions tell what changes in their owners' resources (resource_events.h).
  [[nodiscard]] ResourceEvents& resourceEvents() noexcept { return *resource_events_; }
  // The sessions' exposed ports (expose_port) and their preview labels.
  [[nodiscard]] PreviewTable& previews() noexcept { return previews_; }
  // What minted ids end with after "~" (the replica's instance id); empty: nothing.
  [[nodiscard]] const std::string& routeTag() const noexcept { return route_tag_; }

  // Validates a session id as a client sends it back (letters, digits, "-", "_", ".", "~";
  // 1-128 chars), before it is looked up.
  [[nodiscard]] static std::optional<std::string> checkSessionId(const std::string& id);

 private:
  using Pending = std::shared_future<std::shared_ptr<Session>>;
  struct Entry {
    Pending pending;
    std::string quota_key;  // whose max_sessions it counts against
  };

  [[nodiscard]] static std::string key(const std::string& owner, const std::string& id) {
    return owner + '\n' + id;
  }
  // Sessions (created or being created) the quota key holds; mutex_ held.
  [[nodiscard]] std::size_t heldCount(const std::string& quota_key) const;
  // Why `key`'s session is gone, for the error that names it; mutex_ held.
  [[nodiscard]] std::string goneMessage(const std::string& key, const std::string& id) const;
  // sessions.persist: pauses the sessions of owners that outlive the server and keeps their
  // snapshots, and the named snapshots of those owners.
  void saveForNextRun(const std::vector<Pending>& sessions);
  void reapLoop();
  std::vector<std::shared_ptr<Session>> takeIdle();
  // Running sessions idle past sessions.pause_after_idle_s and not in use; mutex_ held.
  std::vector<std::shared_ptr<Session>> takePausable();
  // Sessions whose sandbox holds a container (running or frozen); mutex_ held.
  std::vector<std::shared_ptr<Session>> residentSessions() const;
  // The frozen tier's tick (outside mutex_): freezes the quiet sessions and pauses the longest
  // frozen past sessions.max_frozen_mib.
  void freezeQuiet(const std::vector<std::shared_ptr<Session>>& resident);
  // Reserves a slot for a new session `session_id` of `caller` under the session limits (throws
  // a "busy:" SandboxError); `lock` holds mutex_ (makeRoomToRun may release it meanwhile).
  void reserve(std::unique_lock<std::mutex>& lock, const Caller& caller,
               const std::string& entry_key, Pending pending);
  // Returns once fewer than sessions.max_sessions sessions run (created, being created or
  // resuming), pausing the longest idle ones to make room for client `asker` (a quota key), within
  // the fair share (longestIdleRunning); throws a "busy:" SandboxError when none can be.
  // `resuming`: the room is for that paused session, whose place among the paused ones another
  // may take. `lock` holds mutex_, released during a pause.
  void makeRoomToRun(std::unique_lock<std::mutex>& lock, const std::string& asker,
                     const Session* resuming);
  // Restores the paused `session` once there is room for it to run; false when its state is
  // lost (the caller forgets it); throws SandboxError (busy, or the engine failed: state kept).
  bool resumeWithRoom(const std::shared_ptr<Session>& session);
  struct PausedTally {
    std::size_t count = 0;
    std::uint64_t bytes = 0;  // their snapshots on disk
  };
  // mutex_ held, each.
  [[nodiscard]] std::size_t runningCount() const;
  [[nodiscard]] PausedTally pausedTally() const;
  // Whether one more session may be paused beside `paused` (max_paused_sessions,
  // max_paused_gib).
  [[nodiscard]] bool roomToPause(PausedTally paused) const;
  // The running (or frozen) session idle longest that could be paused to make room for client
  // `asker`, other than `except`: the asker's own when it runs its fair share of max_sessions
  // already, else one of a client past its share; null: none.
  [[nodiscard]] std::shared_ptr<Session> longestIdleRunning(
      const std::vector<std::shared_ptr<Session>>& except, const std::string& asker) const;

  const config::ServerConfig& config_;
  const std::unique_ptr<SessionFactory> factory_;

  std::mutex mutex_;
  std::condition_variable wake_reaper_;
  bool stopping_ = false;
  const std::string route_tag_;
  // Shared with every session (a session may outlive the registry's hold on it).
  const std::shared_ptr<ResourceEvents> resource_events_ = std::make_shared<ResourceEvents>();
  std::unordered_map<std::string, Entry> sessions_;
  std::size_t resuming_ = 0;  // paused sessions being restored: they count as running
  LostSessions lost_;         // died: the next call under the id gets a fresh sandbox, and is told
  LostSessions ended_;  // ended (cleanup_session, idle expiry): a call under the id is told why
  ExecutionSlots slots_;
  PreviewTable previews_;
  ClientQuota client_executions_;  // per quota key
  std::mutex catalog_mutex_;
  bool catalog_tried_ = false;
  std::unique_ptr<SnapshotCatalog> catalog_;  // after factory_: goes first, the store after it
  SessionFreezer freezer_;                    // the reaper's alone
  std::mutex freezer_tally_mutex_;
  SessionFreezer::Tally freezer_tally_;  // the last tick's, for stateCounts()
  std::thread reaper_;
};

}  // namespace server
