#include "server/session_manager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "common/random_id.h"

namespace server {
namespace {

using sandbox::SandboxError;

std::shared_ptr<spdlog::logger> log() {
  static auto logger = [] {
    auto existing = spdlog::get("sessions");
    return existing ? existing : spdlog::default_logger()->clone("sessions");
  }();
  return logger;
}

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

SessionManager::SessionManager(const config::ServerConfig& config, sandbox::Backend& backend,
                               SessionServices services)
    : config_(config),
      backend_(backend),
      services_(std::move(services)),
      slots_(static_cast<std::size_t>(config.execution.max_concurrent)),
      client_executions_(static_cast<std::size_t>(config.execution.max_concurrent_per_client)),
      reaper_([this] { reapLoop(); }) {
  if (config_.pool.size > 0) {
    WarmPoolOptions options;
    options.size = static_cast<std::size_t>(config_.pool.size);
    options.preload_python = config_.pool.preload_python;
    pool_ = std::make_unique<WarmPool>(
        backend_,
        [this] {
          auto spec = baseSpec(SessionOptions{});
          spec.labels["sandbox-mcp.pool"] = "1";
          return spec;
        },
        options);
  }
}

SessionManager::~SessionManager() { shutdown(); }

std::optional<std::string> SessionManager::checkSessionId(const std::string& id) {
  if (id.empty() || id.size() > 64) return "session_id must be 1 to 64 characters long";
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return "session_id may only contain letters, digits, '-', '_' and '.'";
  }
  return std::nullopt;
}

SessionManager::Acquired SessionManager::acquire(const std::string& owner, const std::string& id,
                                                 const SessionOptions& options,
                                                 bool options_given) {
  const std::string session_id = id.empty() ? "s-" + common::randomHex(8) : id;
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
      throw SandboxError("busy: this client holds " +
                         std::to_string(config_.sessions.max_sessions_per_client) +
                         " sessions, its limit (sessions.max_sessions_per_client). Free one with "
                         "cleanup_session, or reuse one by passing its session_id.");
    }
    if (sessions_.size() >= static_cast<std::size_t>(config_.sessions.max_sessions)) {
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
    auto session = createSession(owner, session_id, options);
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

std::string SessionManager::resolveRuntime() {
  std::lock_guard lock(mutex_);
  if (runtime_) return *runtime_;
  const auto available = backend_.runtimes();
  const bool has = [&](const std::string& name) {
    return std::find(available.begin(), available.end(), name) != available.end();
  }(config_.sandbox.runtime);
  if (has) {
    runtime_ = config_.sandbox.runtime;
    if (*runtime_ == "runc") {
      log()->warn("WEAKENED: sandbox.runtime is runc: sandboxes share the host kernel (no gVisor)");
    }
  } else if (!config_.sandbox.allow_runc_fallback) {
    throw SandboxError(
        "gVisor (runsc) is not registered with the Docker engine, and this server refuses to "
        "run sandboxes without it: run scripts/setup.sh (it installs runsc and adds it to "
        "/etc/docker/daemon.json), then retry. (The operator may accept runc instead with "
        "sandbox.allow_runc_fallback: true, a weakening.)");
  } else {
    log()->warn(
        "WEAKENED: runtime {} is not registered with the engine and sandbox.allow_runc_fallback "
        "is on: sandboxes run under runc and share the host kernel. Run scripts/setup.sh to "
        "install gVisor",
        config_.sandbox.runtime);
    runtime_ = "runc";
  }
  return *runtime_;
}

sandbox::ImageFacts SessionManager::checkImageAllowed(const std::string& image,
                                                      const std::string& what) {
  const auto facts = backend_.inspectImage(image);
  if (!facts) {
    throw SandboxError(what + " '" + image +
                       "' is not present on the Docker engine and this server never pulls "
                       "images. Omit it to use " +
                       config_.sandbox.image + ", or have the operator build or load it.");
  }
  const auto policy = sandbox::makeImagePolicy(
      config_.sandbox.image, config_.sandbox.allowed_images, config_.sandbox.allowed_image_label);
  const auto decision = sandbox::decideImage(
      policy, *facts, image, [this](const std::string& id) { return backend_.inspectImage(id); });
  if (!decision.allowed) throw SandboxError(what + ": " + decision.reason);
  log()->debug("{} '{}' allowed: {}", what, image, decision.reason);
  return *facts;
}

std::string SessionManager::buildImage(const std::string& dockerfile) {
  if (!config_.sandbox.allow_dockerfile) {
    throw SandboxError(
        "the dockerfile argument is off on this server. Omit it (and use image or the default "
        "image). The operator can enable it with sandbox.allow_dockerfile: true (\"sandbox\": "
        "{\"allow_dockerfile\": true} in the config file); builds then run each RUN step under "
        "gVisor with no network");
  }
  // Builds hold CPU and write to the engine's disk: a few at a time, server-wide, whoever asks.
  const BuildSlot slot(running_builds_);
  if (!slot.acquired()) {
    throw SandboxError("busy: " + std::to_string(kMaxConcurrentBuilds) +
                       " image builds are running on this server; retry in a minute (an "
                       "identical dockerfile is built once and cached)");
  }
  sandbox::BuildRequest request;
  request.plan = sandbox::parseBuildFile(dockerfile,
                                         static_cast<std::size_t>(config_.sandbox.build_max_steps));
  request.base_id = checkImageAllowed(request.plan.from, "dockerfile FROM image").id;
  request.runtime = config_.sandbox.build_runtime;
  request.limits = baseLimits();
  request.timeout = std::chrono::seconds(config_.sandbox.build_timeout_s);
  request.max_size_mib = config_.sandbox.build_max_size_mib;
  return backend_.buildImage(request);
}

std::string SessionManager::resolveImage(const SessionOptions& options) {
  if (!options.dockerfile.empty()) return buildImage(options.dockerfile);
  if (options.image.empty()) return config_.sandbox.image;
  if (!config_.sandbox.allow_custom_images && options.image != config_.sandbox.image) {
    throw SandboxError(
        "the image argument is disabled on this server "
        "(sandbox.allow_custom_images); omit it to use " +
        config_.sandbox.image);
  }
  (void)checkImageAllowed(options.image, "image");
  return options.image;
}

std::unique_ptr<McpGateway> SessionManager::openGateway(const std::string& id,
                                                        const SessionOptions& options) {
  if (!options.mcp_policy || options.mcp_policy->rules.empty()) return nullptr;
  if (services_.sidecars == nullptr || services_.runtime_dir == nullptr) {
    throw SandboxError(
        "mcp_allowlist is not available on this server (it runs without an MCP sidecar); "
        "omit mcp_allowlist");
  }
  const auto& sidecar = config_.mcp.sidecar;
  std::vector<std::string> limit_flags = {"--upstream-connect-timeout-ms",
                                          std::to_string(sidecar.upstream_connect_timeout_ms),
                                          "--upstream-idle-timeout-ms",
                                          std::to_string(sidecar.upstream_idle_timeout_ms),
                                          "--max-concurrent-requests",
                                          std::to_string(sidecar.max_concurrent_requests),
                                          "--max-body-bytes",
                                          std::to_string(sidecar.max_body_bytes),
                                          "--audit-log-max-bytes",
                                          std::to_string(sidecar.audit_log_max_bytes)};
  // The relay writes its socket and audit log there: in a container it runs as sidecar.user,
  // as a child process it runs as the server.
  const std::string owner = services_.sidecars->mode() == "container"
                                ? sidecar.user
                                : std::to_string(::geteuid()) + ":" + std::to_string(::getegid());
  return std::make_unique<McpGateway>(
      *services_.sidecars, services_.runtime_dir->createSessionDir(owner), id, options.mcp_policy,
      std::move(limit_flags),
      RetainedAuditLog(config_.mcp.audit_log,
                       static_cast<std::uint64_t>(config_.mcp.audit_log_max_bytes)),
      services_.server_endpoints ? services_.server_endpoints->get()
                                 : std::vector<policy::Endpoint>{});
}

sandbox::Limits SessionManager::baseLimits() const {
  sandbox::Limits limits;
  limits.memory_mib = config_.sandbox.memory_mib;
  limits.cpus = config_.sandbox.cpus;
  limits.pids = config_.sandbox.pids_limit;
  limits.tmp_size_mib = config_.sandbox.tmp_size_mib;
  limits.workdir_size_mib = config_.sandbox.workdir_size_mib;
  return limits;
}

sandbox::SandboxSpec SessionManager::baseSpec(const SessionOptions& options) {
  sandbox::SandboxSpec spec;
  spec.runtime = resolveRuntime();
  spec.image = resolveImage(options);
  spec.environment = options.environment;
  spec.volumes = options.volumes;
  spec.limits = baseLimits();
  spec.user = config_.sandbox.user;
  spec.workdir = config_.sandbox.workdir;
  spec.read_only_root = config_.sandbox.read_only_root;
  spec.python_helper_dir = services_.python_helper_dir;
  return spec;
}

std::shared_ptr<Session> SessionManager::createSession(const std::string& owner,
                                                       const std::string& id,
                                                       const SessionOptions& options) {
  sandbox::SandboxSpec spec = baseSpec(options);
  spec.labels["sandbox-mcp.session"] = id;
  auto gateway = openGateway(id, options);
  if (gateway) {
    spec.volumes.push_back({gateway->socketDir(), kMcpSocketMount, /*read_only=*/true});
    spec.environment[kMcpSocketEnv] = std::string(kMcpSocketMount) + "/mcp.sock";
  }
  for (const auto& volume : spec.volumes) {
    log()->info("session {}: mounting host {} at {} ({})", id, volume.host_path,
                volume.container_path, volume.read_only ? "ro" : "rw");
  }
  // The relay starts while the sandbox is created (both take a container start); the socket
  // shows up in the already-mounted directory.
  std::future<void> relay;
  if (gateway) relay = std::async(std::launch::async, [&gateway] { gateway->start(); });
  std::unique_ptr<sandbox::Sandbox> sandbox;
  // A session with a relay needs its socket directory mounted at creation: always cold.
  if (pool_ && !gateway) sandbox = pool_->take(spec);
  const bool warm = sandbox != nullptr;
  try {
    if (!sandbox) sandbox = backend_.create(spec);
  } catch (...) {
    if (relay.valid()) relay.wait();  // the gateway (and its relay) is destroyed on the way out
    throw;
  }
  if (relay.valid()) relay.get();  // a relay that failed fails the session; the sandbox goes too
  log()->info("session {} {}: container {} image {} runtime {}", id,
              warm ? "claimed a pooled sandbox" : "created", sandbox->id(), spec.image,
              spec.runtime);
  auto session =
      std::make_shared<Session>(id, owner, options, std::move(sandbox), std::move(gateway));
  session->setWarmStart(warm);
  return session;
}

std::shared_ptr<Session> SessionManager::find(const std::string& owner, const std::string& id) {
  if (auto problem = checkSessionId(id)) throw SandboxError(*problem);
  Pending pending;
  {
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(key(owner, id));
    if (it == sessions_.end()) throw SandboxError(unknownSessionMessage(id));
    pending = it->second;
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

bool SessionManager::remove(const std::string& owner, const std::string& id) {
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

void SessionManager::forget(const std::shared_ptr<Session>& session, std::string reason) {
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

std::vector<std::shared_ptr<Session>> SessionManager::list(const std::string& owner) {
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

void SessionManager::closeOwner(const std::string& owner) {
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

std::size_t SessionManager::ownedCount(const std::string& owner) const {
  const std::string prefix = owner + '\n';
  return static_cast<std::size_t>(std::count_if(
      sessions_.begin(), sessions_.end(),
      [&](const auto& entry) { return entry.first.compare(0, prefix.size(), prefix) == 0; }));
}

std::size_t SessionManager::size() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::vector<std::shared_ptr<Session>> SessionManager::takeIdle() {
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

void SessionManager::reapLoop() {
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

ExecutionClaim SessionManager::claimExecutionSlot(const std::string& owner) {
  auto share = client_executions_.tryClaim(owner);
  if (!share) {
    throw SandboxError("busy: this client already runs " +
                       std::to_string(client_executions_.perClient()) +
                       " executions, its limit (execution.max_concurrent_per_client). Wait for "
                       "one to finish; the session is unchanged.");
  }
  auto slot = slots_.tryClaim();
  if (!slot) {
    throw SandboxError("busy: " + std::to_string(slots_.capacity()) +
                       " executions are already running on this server "
                       "(execution.max_concurrent). Retry in a moment; the session is unchanged.");
  }
  return ExecutionClaim{std::move(*share), std::move(*slot)};
}

WarmPool::Stats SessionManager::poolStats() { return pool_ ? pool_->stats() : WarmPool::Stats{}; }

void SessionManager::shutdown() {
  if (pool_) pool_->stop();
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
