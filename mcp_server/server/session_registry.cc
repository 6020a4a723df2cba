#include "server/session_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <optional>
#include <system_error>

#include "common/random_id.h"
#include "server/sessions_log.h"

namespace server {
namespace {

using sandbox::SandboxError;

// For ids nothing is remembered about: never held by this caller on this replica, or ended so
// long ago that the memory of it is gone.
std::string unknownSessionMessage(const std::string& id) {
  return "Unknown session '" + id +
         "': it does not exist on this server (it ended: cleanup_session, idle expiry, a server "
         "restart; or it belongs to another client, or was never created). Its variables and "
         "files are gone. Call run_code or run_shell without session_id to start a new session, "
         "and pass the session_id its result gives.";
}

std::string lostSandboxMessage(const std::string& id, const std::string& reason) {
  return "The sandbox of session '" + id + "' was lost (" + reason +
         "); its variables and files are gone. Call run_code or run_shell with session_id '" + id +
         "' to start a fresh sandbox under the same id.";
}

// Names the first option that differs, so the caller knows which argument to drop.
std::string firstDifference(const SessionOptions& have, const SessionOptions& want) {
  if (want.image != have.image) return "image";
  if (want.dockerfile != have.dockerfile) return "dockerfile";
  if (want.environment != have.environment) return "environment";
  if (want.volumes != have.volumes) return "volumes";
  if (want.mcp_allowlist != have.mcp_allowlist) return "mcp_allowlist";
  const auto egress = [](const SessionOptions& options) {
    return options.arguments.value("egress", nlohmann::json(false));
  };
  if (egress(want) != egress(have)) return "egress";
  if (want.freeze != have.freeze) return "freeze";
  return {};
}

// Tearing a sandbox down is an Engine API round trip (~200 ms); many go side by side so that
// a disconnect or shutdown with dozens of sessions stays quick.
void destroyConcurrently(std::vector<std::shared_future<std::shared_ptr<Session>>> doomed) {
  constexpr std::size_t kParallel = 16;
  for (std::size_t begin = 0; begin < doomed.size(); begin += kParallel) {
    std::vector<std::thread> workers;
    for (std::size_t i = begin; i < std::min(doomed.size(), begin + kParallel); ++i) {
      workers.emplace_back([pending = std::move(doomed[i])]() mutable {
        try {
          pending.get();
        } catch (const std::exception&) {
          return;  // its creation failed: nothing to tear down
        }
        pending = {};  // the last reference: the sandbox is destroyed on this thread
      });
    }
    for (auto& worker : workers) worker.join();
  }
}

// The frozen tier as this server runs it: off when the operator turned it off or the backend
// cannot freeze (said once).
FreezeSettings freezeSettings(const config::ServerConfig& config, SessionFactory& factory) {
  FreezeSettings settings;
  if (config.sessions.freeze_after_idle_s <= 0) return settings;
  if (const auto why = factory.freezeUnsupported()) {
    log()->info("idle sessions stay running (sessions.freeze_after_idle_s is off here): {}", *why);
    return settings;
  }
  settings.after = std::chrono::seconds(config.sessions.freeze_after_idle_s);
  settings.max_frozen_bytes = config.sessions.max_frozen_mib > 0
                                  ? static_cast<std::uint64_t>(config.sessions.max_frozen_mib) << 20
                                  : defaultFrozenBudgetBytes();
  log()->info(
      "sessions quiet for {} s are frozen (sessions.freeze_after_idle_s: no CPU, thawed by their "
      "next use); frozen ones hold at most {} MiB (sessions.max_frozen_mib), the longest frozen "
      "are paused to disk past it",
      config.sessions.freeze_after_idle_s, settings.max_frozen_bytes >> 20);
  return settings;
}

}  // namespace

SessionRegistry::SessionRegistry(const config::ServerConfig& config,
                                 std::unique_ptr<SessionFactory> factory, std::string route_tag)
    : config_(config),
      factory_(std::move(factory)),
      route_tag_(std::move(route_tag)),
      slots_(static_cast<std::size_t>(config.execution.max_concurrent)),
      freezer_(freezeSettings(config, *factory_)),
      reaper_([this] { reapLoop(); }) {}

SessionRegistry::~SessionRegistry() { shutdown(); }

std::optional<std::string> SessionRegistry::checkSessionId(const std::string& id) {
  constexpr const char* kHint =
      ": pass back the session_id a run_code or run_shell result gave, or omit it to start a new "
      "session";
  if (id.empty() || id.size() > 128)
    return std::string("session_id must be 1 to 128 characters") + kHint;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~';
    if (!ok)
      return std::string("session_id may only contain letters, digits, '-', '_', '.' and '~'") +
             kHint;
  }
  return std::nullopt;
}

SessionRegistry::Acquired SessionRegistry::acquire(const Caller& caller, const std::string& id,
                                                   const SessionOptions& options,
                                                   bool options_given, CancelToken* cancel) {
  const bool minted = id.empty();
  const std::string session_id =
      minted ? "s-" + common::randomHex(16) + (route_tag_.empty() ? "" : "~" + route_tag_) : id;
  if (auto problem = checkSessionId(session_id)) throw SandboxError(*problem);
  const std::string entry_key = key(caller.owner, session_id);

  std::promise<std::shared_ptr<Session>> promise;
  std::optional<std::string> lost_reason;
  for (;;) {
    std::unique_lock lock(mutex_);
    if (stopping_) throw SandboxError("the server is shutting down; retry on a new connection");
    const auto it = sessions_.find(entry_key);
    if (it != sessions_.end()) {
      Pending pending = it->second.pending;
      lock.unlock();
      const auto& session = pending.get();  // rethrows the creator's error
      if (!session->sandbox().alive()) {
        // Died since its last use (killed from outside, OOM): replace it, and say so.
        forget(session);
        continue;
      }
      if (session->paused() && !resumeWithRoom(session)) {
        forget(session);  // its stop reason says why the restore failed; the id starts fresh
        continue;
      }
      session->touch();  // in use from now: never the idlest to pause for room
      if (options_given) {
        if (auto field = firstDifference(session->options(), options); !field.empty()) {
          throw SandboxError("session '" + session_id + "' was created with a different " + field +
                             "; session options are fixed at creation. Omit " + field +
                             " to keep using this session, or start a new session for it.");
        }
      }
      return {session, false, std::nullopt};
    }
    // Only a sandbox that died comes back under its id; an unknown id never makes one: a handle is
    // minted here, so a client cannot pick (or guess) one.
    if (!minted) {
      lost_reason = lost_.take(entry_key);
      if (!lost_reason) throw SandboxError(goneMessage(entry_key, session_id));
    }
    try {
      reserve(lock, caller, entry_key, promise.get_future().share());
    } catch (const SandboxError&) {
      if (lost_reason) lost_.remember(entry_key, *lost_reason);  // still to be told
      throw;
    }
    break;
  }
  try {
    auto session = factory_->create(caller.owner, session_id, options, cancel);
    session->setResourceEvents(resource_events_);
    promise.set_value(session);
    if (lost_reason) {
      log()->info("session {}: started a fresh sandbox; the previous one was lost", session_id);
    }
    return {session, true, lost_reason};
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    sessions_.erase(entry_key);
    if (lost_reason) lost_.remember(entry_key, *lost_reason);  // still to be told
    throw;
  }
}

bool SessionRegistry::resumeWithRoom(const std::shared_ptr<Session>& session) {
  // Touched first: neither the idle expiry nor the pauser takes it during the restore.
  session->touch();
  {
    std::unique_lock room(mutex_);
    const auto entry = sessions_.find(key(session->owner(), session->id()));
    makeRoomToRun(room, entry != sessions_.end() ? entry->second.quota_key : session->owner(),
                  session.get());
    ++resuming_;  // counts as running from now on
  }
  const struct Resumed {
    SessionRegistry& registry;
    ~Resumed() {
      const std::lock_guard done(registry.mutex_);
      --registry.resuming_;
    }
  } resumed{*this};
  try {
    session->resume();
  } catch (const SandboxError&) {
    if (session->state() != "lost") throw;  // the engine failed: the state is kept
    return false;
  }
  session->touch();
  return true;
}

std::size_t SessionRegistry::runningCount() const {
  std::size_t running = resuming_;
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++running;  // being created
      continue;
    }
    try {
      if (entry.pending.get()->resident()) ++running;
    } catch (const std::exception&) {
    }
  }
  return running;
}

SessionRegistry::PausedTally SessionRegistry::pausedTally() const {
  PausedTally tally;
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      const auto& session = entry.pending.get();
      if (!session->paused()) continue;
      ++tally.count;
      tally.bytes += session->snapshotBytes();
    } catch (const std::exception&) {
    }
  }
  return tally;
}

bool SessionRegistry::roomToPause(PausedTally paused) const {
  return paused.count < static_cast<std::size_t>(config_.sessions.max_paused_sessions) &&
         paused.bytes <
             static_cast<std::uint64_t>(config_.sessions.max_paused_gib) * 1024 * 1024 * 1024;
}

std::shared_ptr<Session> SessionRegistry::longestIdleRunning(
    const std::vector<std::shared_ptr<Session>>& except, const std::string& asker) const {
  // Fair share: each client with a session running (the asker too) may keep max_sessions / that
  // many running. A client at its share makes room from its own sessions only; one under it, from
  // clients past theirs: one client's new sessions cannot push every other client's to disk.
  std::unordered_map<std::string, std::size_t> running{{asker, 0}};
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++running[entry.quota_key];  // being created
      continue;
    }
    try {
      if (entry.pending.get()->resident()) ++running[entry.quota_key];
    } catch (const std::exception&) {
    }
  }
  const std::size_t share = std::max<std::size_t>(
      1, static_cast<std::size_t>(config_.sessions.max_sessions) / running.size());
  const bool asker_at_share = running[asker] >= share;
  std::shared_ptr<Session> idlest;
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    if (asker_at_share ? entry.quota_key != asker : running[entry.quota_key] <= share) continue;
    try {
      auto session = entry.pending.get();
      if (!session->resident() || session->inUse() || !session->pausable() ||
          std::find(except.begin(), except.end(), session) != except.end()) {
        continue;
      }
      if (!idlest || session->idleSeconds() > idlest->idleSeconds()) idlest = std::move(session);
    } catch (const std::exception&) {
    }
  }
  return idlest;
}

void SessionRegistry::makeRoomToRun(std::unique_lock<std::mutex>& lock, const std::string& asker,
                                    const Session* resuming) {
  // Past max_sessions running, the longest idle session is paused to disk (a few tries: one may
  // be called meanwhile, or hold a connection gVisor cannot save).
  constexpr std::size_t kTries = 4;
  const auto limit = static_cast<std::size_t>(config_.sessions.max_sessions);
  std::vector<std::shared_ptr<Session>> tried;
  while (runningCount() >= limit) {
    std::shared_ptr<Session> idlest;
    // A paused session resuming leaves the paused ones: another may take its place.
    auto on_disk = pausedTally();
    if (resuming != nullptr && resuming->paused()) {
      on_disk.count -= 1;
      on_disk.bytes -= std::min(on_disk.bytes, resuming->snapshotBytes());
    }
    if (tried.size() < kTries && roomToPause(on_disk)) {
      idlest = longestIdleRunning(tried, asker);
    }
    if (!idlest) {
      factory_->metrics().refused(SessionMetrics::kSessionsLimit);
      throw SandboxError("busy: the server runs " + std::to_string(limit) +
                         " sessions, its limit (sessions.max_sessions), and none that may make "
                         "room for this client is idle to pause (a client running its share of "
                         "them makes room from its own sessions only). Free one with "
                         "cleanup_session, or retry in a moment.");
    }
    tried.push_back(idlest);
    lock.unlock();
    const bool paused = idlest->pause();
    lock.lock();
    if (paused) log()->info("session {} paused to make room (sessions.max_sessions)", idlest->id());
    if (stopping_) throw SandboxError("the server is shutting down; retry on a new connection");
  }
}

void SessionRegistry::reserve(std::unique_lock<std::mutex>& lock, const Caller& caller,
                              const std::string& entry_key, Pending pending) {
  const auto check_client = [&] {
    if (heldCount(caller.quota_key) < caller.max_sessions) return;
    factory_->metrics().refused(SessionMetrics::kSessionsPerClientLimit);
    throw SandboxError("busy: this client holds " + std::to_string(caller.max_sessions) +
                       " sessions, its limit (sessions.max_sessions_per_client, or its "
                       "principal's max_sessions). Free one with cleanup_session, or reuse one "
                       "by passing its session_id.");
  };
  check_client();  // before anyone is paused for it
  makeRoomToRun(lock, caller.quota_key, /*resuming=*/nullptr);
  check_client();  // again: the lock was released if a session was paused
  sessions_.emplace(entry_key, Entry{std::move(pending), caller.quota_key});
}

SnapshotCatalog* SessionRegistry::existingCatalog() {
  std::lock_guard lock(catalog_mutex_);
  return catalog_.get();
}

SnapshotCatalog* SessionRegistry::snapshots() {
  std::lock_guard lock(catalog_mutex_);
  if (!catalog_tried_) {
    catalog_tried_ = true;
    if (auto* store = factory_->snapshotStore()) {
      SnapshotLimits limits;
      limits.max_count = static_cast<std::size_t>(config_.sessions.max_snapshots_per_client);
      limits.max_bytes =
          static_cast<std::uint64_t>(config_.sessions.max_snapshot_mib_per_client) * 1024 * 1024;
      limits.ttl = std::chrono::seconds(config_.sessions.snapshot_ttl_s);
      catalog_ = std::make_unique<SnapshotCatalog>(*store, limits);
    }
  }
  return catalog_.get();
}

namespace {

SnapshotCatalog& requireCatalog(SnapshotCatalog* catalog) {
  if (catalog == nullptr) {
    throw SandboxError(
        "snapshots are not available on this server: they need gVisor (runsc) on a Docker "
        "engine on the server's host with \"experimental\": true (scripts/setup.sh), and a "
        "writable sessions.snapshot_dir; the server log says which is missing");
  }
  return *catalog;
}

std::string snapshotNotFound(const std::string& name) {
  return "Unknown snapshot '" + name +
         "': this client has no snapshot of that name (snapshot_session makes one; "
         "get_session_stats lists a session's snapshots; they expire after "
         "sessions.snapshot_ttl_s)";
}

}  // namespace

NamedSnapshot SessionRegistry::snapshot(const Caller& caller, const std::string& session_id,
                                        const std::string& name) {
  auto& catalog = requireCatalog(snapshots());
  auto session = find(caller.owner, session_id);
  catalog.requireRoom(caller.owner, caller.quota_key, name);
  SessionUse use(session);
  const auto record = session->snapshot(name);
  NamedSnapshot named;
  named.id = record.id;
  named.name = name;
  named.quota_key = caller.quota_key;
  named.session_id = session_id;
  named.options = session->options();
  named.bytes = record.bytes;
  log()->info("session {}: snapshot '{}' taken ({} MB)", session_id, name, record.bytes / 1000000);
  auto added = catalog.add(caller.owner, std::move(named));
  bool still_held = false;
  {
    std::lock_guard lock(mutex_);
    still_held = sessions_.contains(key(caller.owner, session_id));
  }
  if (!still_held) {  // the client went (or the session ended) while the checkpoint ran
    catalog.remove(caller.owner, name);
    throw SandboxError("session '" + session_id + "' ended while its snapshot was taken");
  }
  return added;
}

void SessionRegistry::rollBack(const Caller& caller, const std::string& session_id,
                               const std::string& name) {
  auto& catalog = requireCatalog(snapshots());
  auto session = find(caller.owner, session_id);
  const auto named = catalog.find(caller.owner, name);
  if (!named) throw SandboxError(snapshotNotFound(name));
  if (named->session_id != session_id) {
    throw SandboxError("snapshot '" + name + "' was taken of session '" + named->session_id +
                       "', not of '" + session_id +
                       "': restore_session rolls a session back to its own snapshots; "
                       "fork_session with this snapshot starts a new session from it");
  }
  SessionUse use(session);
  session->rollBack(named->id);
}

std::vector<std::shared_ptr<Session>> SessionRegistry::fork(const Caller& caller,
                                                            const std::string& from_session,
                                                            const std::string& from_snapshot,
                                                            std::size_t count) {
  auto& catalog = requireCatalog(snapshots());
  auto* store = factory_->snapshotStore();
  SessionOptions options;
  std::string snapshot_id;
  std::optional<std::string> temporary;  // a checkpoint of the session, only for this fork
  if (!from_snapshot.empty()) {
    const auto named = catalog.find(caller.owner, from_snapshot);
    if (!named) throw SandboxError(snapshotNotFound(from_snapshot));
    options = named->options;
    snapshot_id = named->id;
  } else {
    auto session = find(caller.owner, from_session);
    SessionUse use(session);
    options = session->options();
    snapshot_id = session->snapshot("fork", sandbox::kSnapshotForFork).id;
    temporary = snapshot_id;
  }
  struct RemoveTemporary {
    sandbox::SnapshotStore* store;
    const std::optional<std::string>& id;
    ~RemoveTemporary() {
      if (id) store->remove(*id);
    }
  } remove_temporary{store, temporary};

  struct Copy {
    std::string id;
    std::string entry_key;
    std::promise<std::shared_ptr<Session>> promise;
    std::future<std::shared_ptr<Session>> made;
  };
  std::vector<Copy> copies(count);
  std::optional<SandboxError> refusal;
  {
    std::unique_lock lock(mutex_);
    if (stopping_) throw SandboxError("the server is shutting down; retry on a new connection");
    for (std::size_t i = 0; i < count; ++i) {
      auto& copy = copies[i];
      copy.id = "s-" + common::randomHex(16) + (route_tag_.empty() ? "" : "~" + route_tag_);
      copy.entry_key = key(caller.owner, copy.id);
      try {
        reserve(lock, caller, copy.entry_key, copy.promise.get_future().share());
      } catch (const SandboxError& e) {
        refusal = e;
        copies.resize(i);
        break;
      }
    }
  }
  if (copies.empty()) throw *refusal;
  // Side by side: each restore is mostly runsc's own work. A copy whose thread cannot start is
  // made here instead.
  for (auto& copy : copies) {
    auto make = [this, &caller, &options, &snapshot_id, &copy] {
      return factory_->restore(caller.owner, copy.id, options, snapshot_id);
    };
    try {
      copy.made = std::async(std::launch::async, make);
    } catch (const std::system_error&) {
      copy.made = std::async(std::launch::deferred, make);
    }
  }
  std::vector<std::shared_ptr<Session>> made;
  std::optional<std::string> first_error;
  for (auto& copy : copies) {
    try {
      auto session = copy.made.get();
      session->setResourceEvents(resource_events_);
      copy.promise.set_value(session);
      made.push_back(std::move(session));
    } catch (const std::exception& e) {
      copy.promise.set_exception(std::current_exception());
      std::lock_guard lock(mutex_);
      sessions_.erase(copy.entry_key);
      if (!first_error) first_error = e.what();
    }
  }
  if (made.empty()) throw SandboxError("fork_session made no copy: " + first_error.value_or("?"));
  if (first_error)
    log()->warn("fork_session: {} of {} copies failed: {}", copies.size() - made.size(),
                copies.size(), *first_error);
  if (refusal)
    log()->info("fork_session: {} of {} copies made: {}", made.size(), count, refusal->what());
  return made;
}

std::string SessionRegistry::goneMessage(const std::string& key, const std::string& id) const {
  if (const auto lost = lost_.peek(key)) return lostSandboxMessage(id, *lost);
  const auto why = ended_.peek(key);
  if (!why) return unknownSessionMessage(id);
  return "Session '" + id + "' has ended (" + *why +
         "): its variables and files are gone. Call run_code or run_shell without session_id to "
         "start a new session, and pass the session_id its result gives.";
}

std::shared_ptr<Session> SessionRegistry::find(const std::string& owner, const std::string& id,
                                               IfStarting if_starting, IfPaused if_paused) {
  if (auto problem = checkSessionId(id)) throw SandboxError(*problem);
  Pending pending;
  {
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(key(owner, id));
    if (it == sessions_.end()) throw SandboxError(goneMessage(key(owner, id), id));
    pending = it->second.pending;
  }
  if (if_starting == IfStarting::kRefuse &&
      pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    throw SandboxError("session '" + id +
                       "' is still starting (its sandbox is being created, or its image built); "
                       "retry once the call that creates it has answered");
  }
  std::shared_ptr<Session> session;
  try {
    session = pending.get();
  } catch (const std::exception&) {
    throw SandboxError(unknownSessionMessage(id));
  }
  const bool lost = !session->sandbox().alive() || (if_paused == IfPaused::kResume &&
                                                    session->paused() && !resumeWithRoom(session));
  if (lost) {
    const std::string reason = session->sandbox().stopReason().value_or("the sandbox stopped");
    forget(session, reason);
    throw SandboxError(lostSandboxMessage(id, reason));
  }
  if (if_paused == IfPaused::kResume) session->touch();  // about to be used
  return session;
}

bool SessionRegistry::remove(const std::string& owner, const std::string& id) {
  Pending pending;
  {
    std::lock_guard lock(mutex_);
    lost_.erase(key(owner, id));  // an explicit cleanup: the next use is a new session
    const auto it = sessions_.find(key(owner, id));
    if (it == sessions_.end()) return false;
    pending = it->second.pending;
    sessions_.erase(it);
    ended_.remember(key(owner, id), "cleanup_session ended it");
  }
  try {
    pending.get();  // waits for a creation in flight; the sandbox dies with the last reference
  } catch (const std::exception&) {
    return false;
  }
  log()->info("session {} removed", id);
  return true;
}

void SessionRegistry::forget(const std::shared_ptr<Session>& session, std::string reason) {
  if (reason.empty()) {
    // May wait briefly for the engine to report the exit: outside the lock.
    reason = session->sandbox().stopReason().value_or("the sandbox stopped");
  }
  std::lock_guard lock(mutex_);
  const auto it = sessions_.find(key(session->owner(), session->id()));
  if (it == sessions_.end()) return;
  const auto& pending = it->second.pending;
  if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      if (pending.get() != session) return;  // already replaced by a fresh sandbox
    } catch (const std::exception&) {
    }
    sessions_.erase(it);
    lost_.remember(key(session->owner(), session->id()), reason);
    log()->warn("session {}: its sandbox was lost", session->id());
  }
}

void SessionRegistry::refreshSidecarCounts() {
  std::vector<Pending> pendings;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [k, entry] : sessions_) pendings.push_back(entry.pending);
  }
  for (auto& pending : pendings) {
    if (pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      if (auto* gateway = pending.get()->mcpGateway()) gateway->refreshCounts();
    } catch (const std::exception&) {
      // A failed creation, or an unreadable log: nothing to count.
    }
  }
}

std::vector<std::shared_ptr<Session>> SessionRegistry::list(const std::string& owner) {
  std::vector<Pending> pendings;
  {
    std::lock_guard lock(mutex_);
    const std::string prefix = owner + '\n';
    for (const auto& [k, entry] : sessions_) {
      if (k.compare(0, prefix.size(), prefix) == 0) pendings.push_back(entry.pending);
    }
  }
  std::vector<std::shared_ptr<Session>> out;
  for (auto& pending : pendings) {
    if (pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      out.push_back(pending.get());
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->createdAtUnix() < b->createdAtUnix(); });
  return out;
}

void SessionRegistry::closeOwner(const std::string& owner) {
  if (config_.sessions.persist && ownerOutlivesServer(owner)) {
    log()->info("client {} closed; its sessions are kept (sessions.persist)", owner);
    return;
  }
  std::vector<Pending> doomed;
  {
    std::lock_guard lock(mutex_);
    const std::string prefix = owner + '\n';
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->first.compare(0, prefix.size(), prefix) == 0) {
        doomed.push_back(it->second.pending);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    lost_.eraseWithPrefix(prefix);
    ended_.eraseWithPrefix(prefix);
  }
  if (auto* catalog = existingCatalog()) catalog->removeOwner(owner);
  const auto count = doomed.size();
  destroyConcurrently(std::move(doomed));
  if (count > 0) log()->info("closed {} session(s) of a disconnected client", count);
}

std::size_t SessionRegistry::heldCount(const std::string& quota_key) const {
  return static_cast<std::size_t>(
      std::count_if(sessions_.begin(), sessions_.end(),
                    [&](const auto& entry) { return entry.second.quota_key == quota_key; }));
}

std::size_t SessionRegistry::size() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::vector<std::shared_ptr<Session>> SessionRegistry::takeIdle() {
  std::vector<std::shared_ptr<Session>> idle;
  const auto limit = static_cast<double>(config_.sessions.idle_timeout_s);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto& pending = it->second.pending;
    if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        auto session = pending.get();
        if (session->idleSeconds() >= limit) {
          idle.push_back(session);
          ended_.remember(it->first, "it expired after " +
                                         std::to_string(config_.sessions.idle_timeout_s) +
                                         " s idle: sessions.idle_timeout_s");
          it = sessions_.erase(it);
          continue;
        }
      } catch (const std::exception&) {
      }
    }
    ++it;
  }
  return idle;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::takePausable() {
  std::vector<std::shared_ptr<Session>> out;
  const auto after = config_.sessions.pause_after_idle_s;
  if (after <= 0) return out;
  auto paused = pausedTally();  // past its bounds, idle sessions stay running
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      auto session = entry.pending.get();
      if (session->resident() && !session->inUse() &&
          session->idleSeconds() >= static_cast<double>(after) && roomToPause(paused)) {
        ++paused.count;  // its bytes are known once it is paused
        out.push_back(std::move(session));
      }
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::residentSessions() const {
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [k, entry] : sessions_) {
    if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      auto session = entry.pending.get();
      if (session->resident()) out.push_back(std::move(session));
    } catch (const std::exception&) {
    }
  }
  return out;
}

void SessionRegistry::freezeQuiet(const std::vector<std::shared_ptr<Session>>& resident) {
  auto over_budget = freezer_.tick(resident, SessionFreezer::Clock::now());
  {
    std::lock_guard tally(freezer_tally_mutex_);
    freezer_tally_ = freezer_.tally();
  }
  for (const auto& session : over_budget) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || !roomToPause(pausedTally())) return;
    }
    if (session->frozen() && session->pause()) {
      log()->info(
          "session {} paused to disk: frozen sessions hold more than {} MiB "
          "(sessions.max_frozen_mib)",
          session->id(), freezer_.settings().max_frozen_bytes >> 20);
    }
  }
}

SessionRegistry::StateCounts SessionRegistry::stateCounts() {
  StateCounts counts;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [k, entry] : sessions_) {
      if (entry.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
      try {
        const auto& session = entry.pending.get();
        if (session->paused()) {
          ++counts.paused;
        } else if (session->frozen()) {
          ++counts.frozen;
        } else if (session->resident()) {
          ++counts.running;
        }
      } catch (const std::exception&) {
      }
    }
  }
  std::lock_guard tally(freezer_tally_mutex_);
  counts.freezes = freezer_tally_.freezes;
  return counts;
}

void SessionRegistry::reapLoop() {
  std::int64_t shortest = config_.sessions.idle_timeout_s;
  if (config_.sessions.pause_after_idle_s > 0) {
    shortest = std::min(shortest, config_.sessions.pause_after_idle_s);
  }
  if (freezer_.enabled()) shortest = std::min(shortest, config_.sessions.freeze_after_idle_s);
  const auto period = std::chrono::milliseconds(
      std::clamp<std::int64_t>(shortest * 1000 / 4, 250, std::int64_t{30000}));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_reaper_.wait_for(lock, period);
    if (stopping_) break;
    auto idle = takeIdle();
    auto pausable = takePausable();
    auto resident = freezer_.enabled() ? residentSessions() : decltype(residentSessions()){};
    lock.unlock();
    if (auto* catalog = existingCatalog()) (void)catalog->expire();
    for (const auto& session : idle) {
      log()->info("session {} expired after {} s idle (sessions.idle_timeout_s)", session->id(),
                  config_.sessions.idle_timeout_s);
    }
    idle.clear();  // destroys the sandboxes outside the lock
    if (freezer_.enabled()) freezeQuiet(resident);
    resident.clear();
    // One at a time: a checkpoint writes the sandbox's memory to disk; calls to other sessions
    // go on meanwhile, and a session called while it waits here is skipped (in use, or touched).
    for (const auto& session : pausable) {
      {
        std::lock_guard stop_check(mutex_);
        if (stopping_) break;
      }
      if (session->idleSeconds() >= static_cast<double>(config_.sessions.pause_after_idle_s)) {
        (void)session->pause();
      }
    }
    pausable.clear();
    lock.lock();
  }
}

ExecutionClaim SessionRegistry::claimExecutionSlot(const Caller& caller) {
  auto share = client_executions_.tryClaim(caller.quota_key, caller.max_concurrent_executions);
  if (!share) {
    factory_->metrics().refused(SessionMetrics::kExecutionsPerClientLimit);
    throw SandboxError("busy: this client already runs " +
                       std::to_string(caller.max_concurrent_executions) +
                       " executions, its limit (execution.max_concurrent_per_client, or its "
                       "principal's max_concurrent_executions). Wait for one to finish; the "
                       "session is unchanged.");
  }
  auto slot = slots_.tryClaim();
  if (!slot) {
    factory_->metrics().refused(SessionMetrics::kExecutionsLimit);
    throw SandboxError("busy: " + std::to_string(slots_.capacity()) +
                       " executions are already running on this server "
                       "(execution.max_concurrent). Retry in a moment; the session is unchanged.");
  }
  return ExecutionClaim{std::move(*share), std::move(*slot)};
}

void SessionRegistry::shutdown() {
  factory_->cancelCreations();  // no builds or new sandboxes while the sessions go
  factory_->stop();             // nor pool refills
  std::vector<Pending> doomed;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !reaper_.joinable()) return;
    stopping_ = true;
    for (auto& [k, entry] : sessions_) doomed.push_back(entry.pending);
    sessions_.clear();
  }
  wake_reaper_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  if (config_.sessions.persist) saveForNextRun(doomed);
  const auto count = doomed.size();
  destroyConcurrently(std::move(doomed));
  if (count > 0) log()->info("shut down {} session(s)", count);
}

void SessionRegistry::saveForNextRun(const std::vector<Pending>& sessions) {
  std::vector<std::shared_ptr<Session>> savable;
  for (const auto& pending : sessions) {
    if (pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      auto session = pending.get();
      if (ownerOutlivesServer(session->owner())) savable.push_back(std::move(session));
    } catch (const std::exception&) {
    }
  }
  // Each save is a checkpoint (~0.5 s of runsc work and disk): a few side by side.
  constexpr std::size_t kParallel = 4;
  std::atomic<std::size_t> saved{0};
  for (std::size_t begin = 0; begin < savable.size(); begin += kParallel) {
    std::vector<std::future<void>> running;
    for (std::size_t i = begin; i < std::min(savable.size(), begin + kParallel); ++i) {
      auto save = [&saved, session = savable[i]] {
        if (session->persist()) saved.fetch_add(1);
      };
      try {
        running.push_back(std::async(std::launch::async, save));
      } catch (const std::system_error&) {
        save();
      }
    }
    for (auto& done : running) done.wait();
  }
  if (auto* catalog = existingCatalog()) {
    catalog->keepOwners([](const std::string& owner) { return ownerOutlivesServer(owner); });
  }
  if (!savable.empty()) {
    log()->info(
        "saved {} of {} session(s) to {} for the next run of instance {} "
        "(sessions.persist)",
        saved.load(), savable.size(), config_.sessions.snapshot_dir, route_tag_);
  }
}

namespace {

// The option arguments a session's snapshot recorded (PausableSandbox's session facts).
nlohmann::json recordedArguments(const sandbox::SnapshotRecord& record) {
  const auto session = record.facts.extra.find("session");
  if (session == record.facts.extra.end() || !session->is_object()) return nlohmann::json::object();
  const auto options = session->find("options");
  return options != session->end() && options->is_object() ? *options : nlohmann::json::object();
}

std::string kindOf(const sandbox::SnapshotRecord& record) {
  const auto kind = record.facts.extra.find("kind");
  return kind != record.facts.extra.end() && kind->is_string() ? kind->get<std::string>() : "";
}

}  // namespace

std::size_t SessionRegistry::revive(const OptionsReader& read_options) {
  if (!config_.sessions.persist) return 0;
  auto* store = factory_->snapshotStore();
  if (store == nullptr) {
    log()->warn(
        "sessions.persist is on, but this server cannot save sessions (no snapshots here: the "
        "log says why above); sessions end with the server");
    return 0;
  }
  auto* catalog = snapshots();
  std::map<std::string, sandbox::SnapshotRecord> paused;  // the newest per session
  std::vector<std::string> leftover;
  std::size_t named = 0;
  for (auto& record : store->list()) {  // oldest first
    const auto& owner = record.facts.owner;
    // Only what a returning owner can reach again: a 2025 HTTP session's, a fork's temporary,
    // a named one without a catalog are removed.
    const bool reachable =
        ownerOutlivesServer(owner) && !checkSessionId(record.facts.session_id).has_value();
    const auto kind = reachable ? kindOf(record) : std::string();
    if (kind == sandbox::kSnapshotOfPause) {
      auto [it, first] = paused.try_emplace(key(owner, record.facts.session_id), record);
      if (!first) {
        leftover.push_back(it->second.id);
        it->second = std::move(record);
      }
    } else if (kind == sandbox::kSnapshotNamed && catalog != nullptr) {
      try {
        NamedSnapshot snapshot;
        snapshot.options = read_options(recordedArguments(record));
        snapshot.id = record.id;
        snapshot.name = record.facts.name;
        snapshot.session_id = record.facts.session_id;
        snapshot.bytes = record.bytes;
        snapshot.created_at_unix = static_cast<double>(record.created_unix);
        catalog->adopt(owner, std::move(snapshot));
        ++named;
      } catch (const std::exception& e) {
        log()->warn("snapshot '{}' of session {} is not kept: {}", record.facts.name,
                    record.facts.session_id, e.what());
        leftover.push_back(record.id);
      }
    } else {
      leftover.push_back(record.id);
    }
  }
  for (const auto& id : leftover) store->remove(id);

  // Newest first: at the limits, the sessions used last come back.
  std::vector<std::pair<std::string, sandbox::SnapshotRecord>> newest_first(paused.begin(),
                                                                            paused.end());
  std::sort(newest_first.begin(), newest_first.end(), [](const auto& a, const auto& b) {
    return a.second.created_unix > b.second.created_unix;
  });
  // What a server saves is what ran (max_sessions) and what was paused (max_paused_sessions).
  const auto room = static_cast<std::size_t>(config_.sessions.max_paused_sessions +
                                             config_.sessions.max_sessions);
  std::size_t revived = 0;
  for (auto& [entry_key, record] : newest_first) {
    const std::string& id = record.facts.session_id;
    try {
      auto session = factory_->revive(record, read_options(recordedArguments(record)));
      session->setResourceEvents(resource_events_);
      std::lock_guard lock(mutex_);
      if (stopping_ || sessions_.contains(entry_key)) {
        (void)session->persist();  // kept as it is, for a later run
        continue;
      }
      if (pausedTally().count >= room) {
        throw SandboxError(
            "the server brought back sessions.max_sessions + max_paused_sessions "
            "sessions used more recently");
      }
      std::promise<std::shared_ptr<Session>> ready;
      ready.set_value(std::move(session));
      sessions_.emplace(entry_key, Entry{ready.get_future().share(), record.facts.owner});
      ++revived;
    } catch (const std::exception& e) {
      log()->warn("session {} is not brought back: {}", id, e.what());
      store->remove(record.id);
      std::lock_guard lock(mutex_);
      lost_.remember(entry_key,
                     std::string("the server restarted and could not bring it back: ") + e.what());
    }
  }
  if (revived > 0 || named > 0) {
    log()->info(
        "brought back {} session(s) and {} named snapshot(s) saved by an earlier run of "
        "instance {} (sessions.persist); each session is restored on its next call",
        revived, named, route_tag_);
  }
  return revived;
}

}  // namespace server
