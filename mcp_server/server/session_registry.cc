#include "server/session_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/random_id.h"
#include "server/sessions_log.h"

namespace server {
namespace {

using sandbox::SandboxError;

std::string unknownSessionMessage(const std::string& id) {
  return "Unknown session '" + id +
         "': it does not exist, has expired or belongs to another client. Call run_code or "
         "run_shell without session_id (or with a new id) to start a session.";
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

}  // namespace

SessionRegistry::SessionRegistry(const config::ServerConfig& config,
                                 std::unique_ptr<SessionFactory> factory)
    : config_(config),
      factory_(std::move(factory)),
      slots_(static_cast<std::size_t>(config.execution.max_concurrent)),
      client_executions_(static_cast<std::size_t>(config.execution.max_concurrent_per_client)),
      reaper_([this] { reapLoop(); }) {}

SessionRegistry::~SessionRegistry() { shutdown(); }

std::optional<std::string> SessionRegistry::checkSessionId(const std::string& id) {
  if (id.empty() || id.size() > 64) return "session_id must be 1 to 64 characters long";
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return "session_id may only contain letters, digits, '-', '_' and '.'";
  }
  return std::nullopt;
}

SessionRegistry::Acquired SessionRegistry::acquire(const std::string& owner, const std::string& id,
                                                   const SessionOptions& options,
                                                   bool options_given, CancelToken* cancel) {
  // 128 random bits: a handle is a capability (every 2026-07-28 caller over HTTP is one principal,
  // so knowing a handle is what reaches its sandbox).
  const std::string session_id = id.empty() ? "s-" + common::randomHex(16) : id;
  if (auto problem = checkSessionId(session_id)) throw SandboxError(*problem);

  std::promise<std::shared_ptr<Session>> promise;
  std::optional<std::string> lost_reason;
  for (;;) {
    std::unique_lock lock(mutex_);
    if (stopping_) throw SandboxError("the server is shutting down; retry on a new connection");
    const auto it = sessions_.find(key(owner, session_id));
    if (it != sessions_.end()) {
      Pending pending = it->second;
      lock.unlock();
      const auto& session = pending.get();  // rethrows the creator's error
      if (!session->sandbox().alive()) {
        // Died since its last use (killed from outside, OOM): replace it, and say so.
        forget(session);
        continue;
      }
      if (options_given) {
        if (auto field = firstDifference(session->options(), options); !field.empty()) {
          throw SandboxError("session '" + session_id + "' was created with a different " + field +
                             "; session options are fixed at creation. Omit " + field +
                             " to keep using this session, or start a new session for it.");
        }
      }
      return {session, false, std::nullopt};
    }
    if (ownedCount(owner) >= static_cast<std::size_t>(config_.sessions.max_sessions_per_client)) {
      factory_->metrics().refused(SessionMetrics::kSessionsPerClientLimit);
      throw SandboxError("busy: this client holds " +
                         std::to_string(config_.sessions.max_sessions_per_client) +
                         " sessions, its limit (sessions.max_sessions_per_client). Free one with "
                         "cleanup_session, or reuse one by passing its session_id.");
    }
    if (sessions_.size() >= static_cast<std::size_t>(config_.sessions.max_sessions)) {
      factory_->metrics().refused(SessionMetrics::kSessionsLimit);
      throw SandboxError("busy: the server is at its limit of " +
                         std::to_string(config_.sessions.max_sessions) +
                         " sessions (sessions.max_sessions). Free one with cleanup_session, or "
                         "retry after idle sessions expire.");
    }
    sessions_.emplace(key(owner, session_id), promise.get_future().share());
    lost_reason = lost_.take(key(owner, session_id));
    break;
  }
  try {
    auto session = factory_->create(owner, session_id, options, cancel);
    promise.set_value(session);
    if (lost_reason) {
      log()->info("session {}: started a fresh sandbox; the previous one was lost", session_id);
    }
    return {session, true, lost_reason};
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    sessions_.erase(key(owner, session_id));
    if (lost_reason) lost_.remember(key(owner, session_id), *lost_reason);  // still to be told
    throw;
  }
}

std::shared_ptr<Session> SessionRegistry::find(const std::string& owner, const std::string& id,
                                               IfStarting if_starting) {
  if (auto problem = checkSessionId(id)) throw SandboxError(*problem);
  Pending pending;
  {
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(key(owner, id));
    if (it == sessions_.end()) throw SandboxError(unknownSessionMessage(id));
    pending = it->second;
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
  if (!session->sandbox().alive()) {
    const std::string reason = session->sandbox().stopReason().value_or("the sandbox stopped");
    forget(session, reason);
    throw SandboxError(lostSandboxMessage(id, reason));
  }
  return session;
}

bool SessionRegistry::remove(const std::string& owner, const std::string& id) {
  Pending pending;
  {
    std::lock_guard lock(mutex_);
    lost_.erase(key(owner, id));  // an explicit cleanup: the next use is a new session
    const auto it = sessions_.find(key(owner, id));
    if (it == sessions_.end()) return false;
    pending = it->second;
    sessions_.erase(it);
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
  const auto& pending = it->second;
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
    for (const auto& [k, pending] : sessions_) pendings.push_back(pending);
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
    for (const auto& [k, pending] : sessions_) {
      if (k.compare(0, prefix.size(), prefix) == 0) pendings.push_back(pending);
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
  std::vector<Pending> doomed;
  {
    std::lock_guard lock(mutex_);
    const std::string prefix = owner + '\n';
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->first.compare(0, prefix.size(), prefix) == 0) {
        doomed.push_back(it->second);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    lost_.eraseWithPrefix(prefix);
  }
  const auto count = doomed.size();
  destroyConcurrently(std::move(doomed));
  if (count > 0) log()->info("closed {} session(s) of a disconnected client", count);
}

std::size_t SessionRegistry::ownedCount(const std::string& owner) const {
  const std::string prefix = owner + '\n';
  return static_cast<std::size_t>(std::count_if(
      sessions_.begin(), sessions_.end(),
      [&](const auto& entry) { return entry.first.compare(0, prefix.size(), prefix) == 0; }));
}

std::size_t SessionRegistry::size() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::vector<std::shared_ptr<Session>> SessionRegistry::takeIdle() {
  std::vector<std::shared_ptr<Session>> idle;
  const auto limit = static_cast<double>(config_.sessions.idle_timeout_s);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto& pending = it->second;
    if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        auto session = pending.get();
        if (session->idleSeconds() >= limit) {
          idle.push_back(session);
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

void SessionRegistry::reapLoop() {
  const auto period =
      std::chrono::seconds(std::clamp<std::int64_t>(config_.sessions.idle_timeout_s / 4, 1, 30));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_reaper_.wait_for(lock, period);
    if (stopping_) break;
    auto idle = takeIdle();
    lock.unlock();
    for (const auto& session : idle) {
      log()->info("session {} expired after {} s idle (sessions.idle_timeout_s)", session->id(),
                  config_.sessions.idle_timeout_s);
    }
    idle.clear();  // destroys the sandboxes outside the lock
    lock.lock();
  }
}

ExecutionClaim SessionRegistry::claimExecutionSlot(const std::string& owner) {
  auto share = client_executions_.tryClaim(owner);
  if (!share) {
    factory_->metrics().refused(SessionMetrics::kExecutionsPerClientLimit);
    throw SandboxError("busy: this client already runs " +
                       std::to_string(client_executions_.perClient()) +
                       " executions, its limit (execution.max_concurrent_per_client). Wait for "
                       "one to finish; the session is unchanged.");
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
    for (auto& [k, pending] : sessions_) doomed.push_back(pending);
    sessions_.clear();
  }
  wake_reaper_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  const auto count = doomed.size();
  destroyConcurrently(std::move(doomed));
  if (count > 0) log()->info("shut down {} session(s)", count);
}

}  // namespace server
