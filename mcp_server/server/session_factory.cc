#include "server/session_factory.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>

#include "server/session_egress.h"
#include "server/sessions_log.h"

namespace server {
namespace {

using sandbox::SandboxError;

// Why nothing starts once the server stops; `what` says what was stopped, if anything.
std::string shuttingDown(const std::string& what = {}) {
  return "the server is shutting down" + (what.empty() ? std::string() : ": " + what) +
         ", and no new sandbox starts. Retry on a new MCP connection (initialize); a load "
         "balancer sends it to another replica";
}

// The sandbox sees its relay's socket directory, read-only, and where the sockets are. With
// egress, its agent forwards 127.0.0.1:<proxy_port> to the proxy's socket, and the usual proxy
// variables point there (pip, npm, git, curl and urllib read them as they are). The session's own
// environment wins (e.g. NO_PROXY for a host it means to reach through the proxy): the proxy
// enforces the rules, not the variables.
void mountRelaySocket(sandbox::SandboxSpec& spec, const McpGateway& gateway,
                      const config::EgressConfig& egress) {
  spec.volumes.push_back({gateway.socketDir(), kMcpSocketMount, /*read_only=*/true});
  if (gateway.servesMcp()) {
    spec.environment[kMcpSocketEnv] = std::string(kMcpSocketMount) + "/mcp.sock";
  }
  if (!gateway.servesEgress()) return;
  const std::string port = std::to_string(egress.proxy_port);
  spec.egress_proxy = port + "=" + kMcpSocketMount + "/" + gateway.egressSocketName();
  const std::string proxy = "http://127.0.0.1:" + port;
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) {
    spec.environment.emplace(name, proxy);
  }
  for (const char* name : {"NO_PROXY", "no_proxy"}) {
    spec.environment.emplace(name, "localhost,127.0.0.1,::1");
  }
  if (!gateway.interceptsTls()) return;
  // The proxy ends TLS for the hosts with secret headers with the session's CA (which the relay
  // writes next to its socket): clients trust it beside the system's CAs.
  const std::string bundle = std::string(kMcpSocketMount) + "/ca-bundle.pem";
  for (const char* name :
       {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}) {
    spec.environment.emplace(name, bundle);
  }
  spec.environment.emplace("NODE_EXTRA_CA_CERTS", std::string(kMcpSocketMount) + "/egress-ca.pem");
}

}  // namespace

// One place among the running builds, held for the scope; acquired() false when none was free.
class SessionFactory::BuildSlot {
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

SessionFactory::SessionFactory(const config::ServerConfig& config, sandbox::Backend& backend,
                               SessionServices services)
    : config_(config), backend_(backend), services_(std::move(services)) {
  if (config_.pool.size > 0) {
    WarmPoolOptions options;
    options.size = static_cast<std::size_t>(config_.pool.size);
    options.preload_python = config_.pool.preload_python;
    options.freeze_ready = config_.sessions.freeze_after_idle_s > 0;
    options.start_delay = services_.pool_start_delay;
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

SessionFactory::~SessionFactory() { stop(); }

void SessionFactory::stop() noexcept {
  if (pool_) pool_->stop();
}

void SessionFactory::cancelCreations() noexcept {
  stopping_.cancel();  // builds under way end within a fraction of a second
}

void SessionFactory::refuseToStart(const CancelToken* cancel) const {
  if (stopping_.cancelled()) throw SandboxError(shuttingDown());
  if (cancel != nullptr && cancel->cancelled()) {
    throw SandboxError(
        "cancelled: the call was cancelled before its sandbox started; nothing "
        "was created");
  }
}

void SessionFactory::warmUp() {
  if (pool_) pool_->fillNow();
}

WarmPool::Stats SessionFactory::poolStats() { return pool_ ? pool_->stats() : WarmPool::Stats{}; }

std::string SessionFactory::resolveRuntime() {
  std::lock_guard lock(runtime_mutex_);
  if (runtime_) return *runtime_;
  const auto available = backend_.runtimes();
  const std::string wanted = config::engineRuntime(config_.sandbox);
  const bool has = std::find(available.begin(), available.end(), wanted) != available.end();
  if (has) {
    runtime_ = wanted;
    if (*runtime_ == "runc") {
      log()->warn("WEAKENED: sandbox.runtime is runc: sandboxes share the host kernel (no gVisor)");
    }
  } else if (!config_.sandbox.platform.empty()) {
    throw SandboxError("the runtime " + wanted + " (gVisor on the " + config_.sandbox.platform +
                       " platform, sandbox.platform) is not registered with the Docker engine: "
                       "run scripts/setup.sh (it registers runsc-systrap and runsc-ptrace, and "
                       "runsc-kvm where KVM works), or leave sandbox.platform out");
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

sandbox::ImageFacts SessionFactory::checkImageAllowed(const std::string& image,
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

std::string SessionFactory::buildImage(const std::string& dockerfile, CancelToken* cancel) {
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
    metrics().refused(SessionMetrics::kBuildsLimit);
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
  // The build's own token fires when the call is cancelled or the server stops. The callbacks
  // hold it by shared_ptr: one may still be running when this function returns.
  const auto build_cancel = std::make_shared<CancelToken>();
  const auto fire = [build_cancel] { build_cancel->cancel(); };
  const CancelSubscription on_stop(stopping_, fire);
  std::optional<CancelSubscription> on_cancel;
  if (cancel != nullptr) on_cancel.emplace(*cancel, fire);
  try {
    return backend_.buildImage(request, *build_cancel);
  } catch (const SandboxError& e) {
    if (!build_cancel->cancelled()) throw;
    if (stopping_.cancelled()) throw SandboxError(shuttingDown(e.what()));
    throw SandboxError(std::string("cancelled: the call was cancelled, so ") + e.what());
  }
}

std::string SessionFactory::resolveImage(const SessionOptions& options, CancelToken* cancel) {
  if (!options.dockerfile.empty()) return buildImage(options.dockerfile, cancel);
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

std::unique_ptr<McpGateway> SessionFactory::openGateway(const std::string& id,
                                                        const SessionOptions& options) {
  const bool mcp = options.mcp_policy && !options.mcp_policy->rules.empty();
  const bool egress = options.egress_policy && !options.egress_policy->rules.empty();
  if (!mcp && !egress) return nullptr;
  if (services_.sidecars == nullptr || services_.runtime_dir == nullptr) {
    throw SandboxError(std::string(mcp ? "mcp_allowlist" : "egress") +
                       " is not available on this server (it runs without a sidecar); omit it");
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
  if (egress) {
    const auto& limits = config_.egress;
    limit_flags.insert(
        limit_flags.end(),
        {"--egress-max-connections", std::to_string(limits.max_connections), "--egress-max-bytes",
         std::to_string(limits.max_mib * 1024 * 1024), "--egress-idle-timeout-ms",
         std::to_string(limits.idle_timeout_s * 1000), "--egress-max-connection-ms",
         std::to_string(limits.max_connection_s * 1000)});
  }
  // Secrets reach MCP servers only through the operator's own list (never a model's).
  const auto operator_mcp =
      mcp && !config_.mcp.allowlist.empty() ? policy::loadPolicy(config_.mcp.allowlist) : nullptr;
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
                                 : std::vector<policy::Endpoint>{},
      &metrics(), egress ? options.egress_policy : nullptr,
      resolveSecrets(config_.egress, egress ? options.egress_policy.get() : nullptr,
                     mcp ? options.mcp_policy.get() : nullptr, operator_mcp.get()),
      config_.egress.upstream_ca_file, config_.mcp.upstream_ca_file);
}

sandbox::Limits SessionFactory::baseLimits() const {
  sandbox::Limits limits;
  limits.memory_mib = config_.sandbox.memory_mib;
  limits.cpus = config_.sandbox.cpus;
  limits.pids = config_.sandbox.pids_limit;
  limits.tmp_size_mib = config_.sandbox.tmp_size_mib;
  limits.workdir_size_mib = config_.sandbox.workdir_size_mib;
  return limits;
}

sandbox::SandboxSpec SessionFactory::baseSpec(const SessionOptions& options, CancelToken* cancel,
                                              const std::string& image) {
  sandbox::SandboxSpec spec;
  spec.runtime = resolveRuntime();
  spec.image = image.empty() ? resolveImage(options, cancel) : image;
  spec.environment = options.environment;
  spec.volumes = options.volumes;
  spec.limits = baseLimits();
  spec.user = config_.sandbox.user;
  spec.workdir = config_.sandbox.workdir;
  spec.read_only_root = config_.sandbox.read_only_root;
  spec.python_helper_dir = services_.python_helper_dir;
  return spec;
}

const SessionMetrics& SessionFactory::metrics() const noexcept {
  static const SessionMetrics kNone;  // no registry: counts nothing, cannot throw
  return services_.metrics != nullptr ? *services_.metrics : kNone;
}

sandbox::SnapshotStore* SessionFactory::snapshotStore() {
  std::lock_guard lock(store_mutex_);
  if (store_tried_) return store_.get();
  store_tried_ = true;
  const auto runtime = resolveRuntime();
  if (const auto why = backend_.checkpointUnsupported(runtime)) {
    log()->info(
        "no snapshots here: idle sessions are not paused, snapshot_session and "
        "fork_session are refused: {}",
        *why);
    return nullptr;
  }
  try {
    store_ = std::make_unique<sandbox::SnapshotStore>(
        config_.sessions.snapshot_dir,
        services_.instance_id.empty() ? "default" : services_.instance_id);
  } catch (const std::exception& e) {
    log()->warn("no snapshots here (idle sessions are not paused): sessions.snapshot_dir {}: {}",
                config_.sessions.snapshot_dir, e.what());
    return nullptr;
  }
  // Without sessions.persist no snapshot outlives its server: what a crashed run left goes. With
  // it, the sealed ones within their time to live wait for SessionRegistry::revive(), and a
  // stopped server of another instance id may still come back for its own.
  const std::chrono::seconds ttl(config_.sessions.snapshot_ttl_s);
  store_->keepForRestart(config_.sessions.persist);
  const int stale =
      store_->removeOlderThan(config_.sessions.persist ? ttl : std::chrono::seconds(0)) +
      store_->removeUnsealed();
  if (stale > 0) log()->info("removed {} snapshot(s) a previous run of this instance left", stale);
  if (const int abandoned = store_->removeAbandoned(ttl); abandoned > 0) {
    log()->info("removed the snapshots of {} server instance(s) that are no longer running",
                abandoned);
  }
  if (config_.sessions.pause_after_idle_s > 0) {
    log()->info("sessions idle for {} s are paused to {} (sessions.pause_after_idle_s)",
                config_.sessions.pause_after_idle_s, config_.sessions.snapshot_dir);
  }
  return store_.get();
}

std::shared_ptr<Session> SessionFactory::restore(const std::string& owner, const std::string& id,
                                                 const SessionOptions& options,
                                                 const std::string& snapshot_id) {
  refuseToStart(nullptr);
  auto* store = snapshotStore();
  if (store == nullptr) throw SandboxError("snapshots are not available on this server");
  const auto record = store->find(snapshot_id);
  if (!record) throw SandboxError("the snapshot is gone (expired, or removed with its client)");
  if (record->facts.owner != owner) {
    throw SandboxError("snapshot " + snapshot_id + " belongs to another client");
  }
  if (record->facts.image.empty()) throw SandboxError("the snapshot does not name its image");
  checkStillAllowed(options);  // a snapshot an earlier run kept, under a config changed since
  // Exactly the image that ran (its id): no build, no tag that may point elsewhere now.
  sandbox::SandboxSpec spec = baseSpec(options, nullptr, record->facts.image);
  const auto format = backend_.checkpointFormat(spec.runtime);
  if (format.empty() || format != record->facts.runtime_version) {
    throw SandboxError("the snapshot was saved by " + record->facts.runtime_version +
                       " and this engine has " + (format.empty() ? "no checkpoints" : format));
  }
  spec.labels["sandbox-mcp.session"] = id;
  auto gateway = openGateway(id, options);
  if (gateway) {
    mountRelaySocket(spec, *gateway, config_.egress);
    gateway->start();
  }
  auto restored = backend_.restore(spec, [store, &snapshot_id](const std::filesystem::path& dir) {
    store->copyVerified(snapshot_id, dir);
  });
  // A fork has its parent's memory, random generators' state included: seed them anew.
  try {
    CancelToken cancel;
    sandbox::ExecRequest reseed;
    reseed.kind = sandbox::ExecKind::kPython;
    reseed.timeout = std::chrono::seconds(10);
    reseed.code =
        "__import__('random').seed()\n"
        "if 'numpy' in __import__('sys').modules: __import__('numpy').random.seed()";
    (void)restored->exec(reseed, cancel, nullptr);
  } catch (const SandboxError& e) {
    log()->warn("session {}: reseeding the restored sandbox failed: {}", id, e.what());
  }
  log()->info("session {} restored from snapshot {} ({} MB)", id, snapshot_id,
              record->bytes / 1000000);
  auto pausable = std::make_unique<sandbox::PausableSandbox>(
      backend_, spec, std::move(restored), store, owner, id, sessionFacts(options));
  return std::make_shared<Session>(id, owner, options, std::move(pausable), std::move(gateway));
}

nlohmann::json SessionFactory::sessionFacts(const SessionOptions& options) {
  return {{"options", options.arguments}};
}

void SessionFactory::checkStillAllowed(const SessionOptions& options) {
  if (!options.dockerfile.empty() && !config_.sandbox.allow_dockerfile) {
    throw SandboxError("it was built from a dockerfile, and sandbox.allow_dockerfile is off now");
  }
  if (!options.image.empty()) {
    if (!config_.sandbox.allow_custom_images && options.image != config_.sandbox.image) {
      throw SandboxError("its image " + options.image +
                         " is not allowed now (sandbox.allow_custom_images is off)");
    }
    (void)checkImageAllowed(options.image, "image");
  }
}

std::shared_ptr<Session> SessionFactory::revive(const sandbox::SnapshotRecord& paused,
                                                const SessionOptions& options) {
  refuseToStart(nullptr);
  auto* store = snapshotStore();
  if (store == nullptr) throw SandboxError("snapshots are not available on this server");
  if (paused.facts.image.empty()) throw SandboxError("its snapshot does not name its image");
  checkStillAllowed(options);
  const std::string& id = paused.facts.session_id;
  sandbox::SandboxSpec spec = baseSpec(options, nullptr, paused.facts.image);
  spec.labels["sandbox-mcp.session"] = id;
  auto gateway = openGateway(id, options);
  if (gateway) {
    mountRelaySocket(spec, *gateway, config_.egress);
    gateway->start();
  }
  auto pausable = std::make_unique<sandbox::PausableSandbox>(
      backend_, spec, paused, *store, paused.facts.owner, id, sessionFacts(options));
  return std::make_shared<Session>(id, paused.facts.owner, options, std::move(pausable),
                                   std::move(gateway));
}

std::shared_ptr<Session> SessionFactory::create(const std::string& owner, const std::string& id,
                                                const SessionOptions& options,
                                                CancelToken* cancel) {
  const auto started = std::chrono::steady_clock::now();
  refuseToStart(cancel);
  sandbox::SandboxSpec spec = baseSpec(options, cancel);
  // A build may have ended just as the server began stopping or the call was cancelled.
  refuseToStart(cancel);
  spec.labels["sandbox-mcp.session"] = id;
  auto gateway = openGateway(id, options);
  if (gateway) {
    mountRelaySocket(spec, *gateway, config_.egress);
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
    metrics().creationFailed();
    if (relay.valid()) relay.wait();  // the gateway (and its relay) is destroyed on the way out
    throw;
  }
  if (relay.valid()) relay.get();  // a relay that failed fails the session; the sandbox goes too
  log()->info("session {} {}: container {} image {} runtime {}", id,
              warm ? "claimed a pooled sandbox" : "created", sandbox->id(), spec.image,
              spec.runtime);
  auto pausable = std::make_unique<sandbox::PausableSandbox>(
      backend_, spec, std::move(sandbox), snapshotStore(), owner, id, sessionFacts(options));
  auto session =
      std::make_shared<Session>(id, owner, options, std::move(pausable), std::move(gateway));
  session->setWarmStart(warm);
  metrics().created(
      warm, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return session;
}

}  // namespace server
