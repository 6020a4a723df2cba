#include "app/server_app.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "app/ca_file_check.h"
#include "app/sandbox_mcp_source.h"
#include "app/server_metrics.h"
#include "app/serving.h"
#include "app/signal_watcher.h"
#include "app/warm_up.h"
#include "common/open_file_limit.h"
#include "config/config.h"
#include "config/weakenings.h"
#include "mcp/mcp_server.h"
#include "mcp/product_prompts.h"
#include "preview/preview_listener.h"
#include "sandbox/docker/docker_backend.h"
#include "sandbox/docker/docker_sidecar.h"
#include "sandbox/docker/runtime_probe.h"
#include "sandbox/process_sidecar.h"
#include "sandbox/runtime_dir.h"
#include "server/session_registry.h"
#include "tools/builtin_tools.h"
#include "tools/session_options.h"
#include "tools/tool_metrics.h"

namespace app {
namespace {

// Everything goes to stderr: in stdio mode stdout carries only JSON-RPC.
void setupLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("sandbox-mcp");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}

config::ServerConfig loadConfig(const CliOptions& options) {
  auto cfg = options.config_path.empty() ? config::fromJson(nlohmann::json::object())
                                         : config::loadFile(options.config_path);
  const char* instance_env = std::getenv("SANDBOX_MCP_INSTANCE_ID");
  const bool instance_from_env = cfg.instance_id.empty() && instance_env && *instance_env;
  if (!options.log_level.empty() || instance_from_env) {
    auto document = config::toJson(cfg);
    if (!options.log_level.empty()) document["log_level"] = options.log_level;
    if (instance_from_env) document["instance_id"] = instance_env;
    try {
      cfg = config::fromJson(document);  // validates what came from the environment too
    } catch (const config::ConfigError& e) {
      if (!instance_from_env) throw;
      throw config::ConfigError(std::string(e.what()) + " (from SANDBOX_MCP_INSTANCE_ID)");
    }
  }
  return cfg;
}

// A helper binary: the configured path, else the file of that name next to sandbox-mcp.
std::string siblingBinary(const std::string& configured, const char* name) {
  if (!configured.empty()) return configured;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (self.parent_path() / name).string();
}

std::string agentPath(const config::ServerConfig& cfg) {
  return siblingBinary(cfg.sandbox.agent_path, "sandbox-agent");
}

std::unique_ptr<sandbox::SidecarLauncher> makeSidecarLauncher(
    const config::ServerConfig& cfg, const sandbox::docker::DockerBackend& backend) {
  const auto& sidecar = cfg.mcp.sidecar;
  const std::string binary = siblingBinary(sidecar.binary_path, "sandbox-sidecar");
  if (sidecar.mode == "process") {
    return std::make_unique<sandbox::ProcessSidecarLauncher>(binary, sidecar.start_timeout_ms);
  }
  sandbox::docker::DockerSidecarOptions options;
  options.image = sidecar.image;
  options.network = sidecar.network;
  options.user = sidecar.user;
  options.binary_path = binary;
  options.memory_mib = sidecar.memory_mib;
  options.pids_limit = sidecar.pids_limit;
  options.start_timeout_ms = sidecar.start_timeout_ms;
  options.labels = backend.containerLabels();
  return std::make_unique<sandbox::docker::DockerSidecarLauncher>(backend.sharedEngine(),
                                                                  std::move(options));
}

sandbox::docker::DockerBackendOptions backendOptions(const config::ServerConfig& cfg) {
  sandbox::docker::DockerBackendOptions options;
  options.host = cfg.docker.host;
  options.tls = {cfg.docker.tls.ca_file, cfg.docker.tls.cert_file, cfg.docker.tls.key_file};
  options.api_version = cfg.docker.api_version;
  options.agent_path = agentPath(cfg);
  options.python_modules = {{"sandbox_mcp.py", std::string(app::kSandboxMcpPython)}};
  options.instance_id = cfg.instance_id;  // empty: DockerBackend picks a random one
  options.request_timeout = std::chrono::milliseconds(cfg.docker.request_timeout_ms);
  options.default_image = cfg.sandbox.image;
  options.built_images.max_count = static_cast<std::size_t>(cfg.sandbox.built_images_max);
  options.built_images.max_idle_s = cfg.sandbox.built_image_max_idle_s;
  return options;
}

// Start-up refuses to serve when a check that every call depends on fails: the failed checks, each
// with how to fix it ("" when ready).
std::string failedChecks(sandbox::Backend& backend, const config::ServerConfig& cfg) {
  std::string failed;
  for (const auto& check : backend.healthChecks()) {
    const bool required = isRequiredCheck(check.name, cfg);
    if (check.ok) {
      spdlog::debug("check {}: {}", check.name, check.detail);
    } else if (required) {
      spdlog::error("check {} failed: {}", check.name, check.detail);
      failed += (failed.empty() ? "check " : "; check ") + check.name + " failed: " + check.detail;
    } else {
      spdlog::warn("check {} failed: {}", check.name, check.detail);
    }
  }
  return failed;
}

// What sessions with an mcp_allowlist or egress need (the sidecar, the CA files it loads); not
// required to serve (other sessions work without).
std::vector<sandbox::HealthCheck> sidecarChecks(const config::ServerConfig& cfg,
                                                sandbox::Backend& backend) {
  if (cfg.docker.host.rfind("tcp://", 0) == 0) {
    return {{"mcp sidecar", true,
             "not used: a sandbox on a remote engine cannot reach a sidecar of this host, so "
             "sessions with mcp_allowlist are refused (a server with a unix:// engine serves "
             "them)"}};
  }
  const std::string binary = siblingBinary(cfg.mcp.sidecar.binary_path, "sandbox-sidecar");
  std::vector<sandbox::HealthCheck> checks;
  const bool binary_ok = ::access(binary.c_str(), X_OK) == 0;
  checks.push_back({"mcp sidecar binary", binary_ok,
                    binary_ok ? binary
                              : binary + " is missing: build the project (scripts/setup.sh), or "
                                         "set mcp.sidecar.binary_path"});
  if (cfg.mcp.sidecar.mode == "container") {
    const bool image_ok = backend.imageExists(cfg.mcp.sidecar.image);
    checks.push_back({"mcp sidecar image", image_ok,
                      image_ok
                          ? cfg.mcp.sidecar.image
                          : cfg.mcp.sidecar.image + " is missing: run scripts/setup.sh (or "
                                                    "docker/build-sidecar-image.sh BINARY), or set "
                                                    "mcp.sidecar.mode to \"process\""});
  }
  if (!cfg.mcp.upstream_ca_file.empty()) {
    checks.push_back(caFileCheck("mcp.upstream_ca_file", cfg.mcp.upstream_ca_file));
  }
  // The proxy loads it only to verify hosts it sets secrets for.
  if (!cfg.egress.upstream_ca_file.empty() && cfg.egress.enabled && !cfg.egress.secrets.empty()) {
    checks.push_back(caFileCheck("egress.upstream_ca_file", cfg.egress.upstream_ca_file));
  }
  return checks;
}

// Doctor only (they start containers): ls/stat under the sandbox runtime, and the build runtime
// when Dockerfile builds are on.
std::vector<sandbox::HealthCheck> sandboxChecks(const config::ServerConfig& cfg,
                                                sandbox::docker::DockerBackend& backend) {
  std::vector<sandbox::HealthCheck> checks;
  const auto runtimes = backend.runtimes();
  const auto has = [&](const std::string& name) {
    return std::find(runtimes.begin(), runtimes.end(), name) != runtimes.end();
  };
  const std::string runtime = config::engineRuntime(cfg.sandbox);
  if (has(runtime) && backend.imageExists(cfg.sandbox.image)) {
    checks.push_back(sandbox::docker::probeFileListing(backend.engine(), cfg.sandbox.image, runtime,
                                                       backend.containerLabels()));
  }
  if (cfg.sandbox.allow_dockerfile) {
    const bool ok = has(cfg.sandbox.build_runtime);
    checks.push_back({"build runtime", ok,
                      ok ? cfg.sandbox.build_runtime + " registered (Dockerfile RUN steps)"
                         : cfg.sandbox.build_runtime +
                               " is not registered with dockerd, so Dockerfile builds fail. Fix: "
                               "scripts/setup.sh registers runsc-build (runsc --overlay2=none) in "
                               "/etc/docker/daemon.json"});
  }
  return checks;
}

// The start-up work that needs the engine, in order: the checks every call depends on (when one
// fails, why the server cannot serve is the result), the sidecar's, removing the containers an
// earlier server with this instance id left, the runtime sandboxes use; then the warm pool fills.
// Returns "" when the server can serve.
std::string prepareEngine(const config::ServerConfig& cfg, sandbox::docker::DockerBackend& backend,
                          server::SessionRegistry& sessions) {
  if (const auto failed = failedChecks(backend, cfg); !failed.empty()) {
    spdlog::error(
        "not ready to serve; run `scripts/setup.sh` (or `sandbox-mcp doctor` for the "
        "full check-list)");
    return "sandbox-mcp cannot serve: " + failed +
           ". Run scripts/setup.sh (or `sandbox-mcp doctor` for the full check-list)";
  }
  for (const auto& check : sidecarChecks(cfg, backend)) {
    if (!check.ok)
      spdlog::warn("check {} failed: {} (sessions that need it will fail)", check.name,
                   check.detail);
  }
  if (const int removed = backend.removeOrphans(); removed > 0) {
    spdlog::info("removed {} sandbox container(s) left by an earlier server", removed);
  }
  spdlog::info("sandboxes use runtime {} and image {}", sessions.factory().resolveRuntime(),
               cfg.sandbox.image);
  // Saved sessions come back checked against this config, as a call's arguments would be.
  (void)sessions.revive([&cfg](const nlohmann::json& arguments) {
    return tools::parseSessionOptions(arguments, cfg).options;
  });
  sessions.factory().warmUp();
  return {};
}

// Startup says out loud what the operator weakened.
void logWeakenings(const config::ServerConfig& cfg) {
  for (const auto& line : config::weakenings(cfg)) spdlog::warn("{}", line);
}

// Every connection, sandbox channel and engine connection holds a descriptor: the soft limit
// (often 1024) goes up to the hard one.
void raiseOpenFiles() {
  const auto limit = common::raiseOpenFileLimit();
  if (limit.error != 0) {
    spdlog::warn("open files: {} allowed; raising it to the hard limit {} failed: {}", limit.now,
                 limit.hard, std::strerror(limit.error));
  } else if (limit.now > limit.before) {
    spdlog::info("open files: {} allowed (raised from {} to the hard limit)", limit.now,
                 limit.before);
  } else {
    spdlog::info("open files: {} allowed (the hard limit; raise it with ulimit -n or LimitNOFILE=)",
                 limit.now);
  }
}

int serve(const CliOptions& options, const config::ServerConfig& cfg) {
  if (cfg.sessions.persist && cfg.instance_id.empty()) {
    throw config::ConfigError(
        "sessions.persist needs a fixed instance_id (in the config file, or "
        "SANDBOX_MCP_INSTANCE_ID): a server started again finds the sessions it saved by it. "
        "Give each server its own");
  }
  SignalWatcher signals;  // before any thread starts, so all inherit the mask
  raiseOpenFiles();
  logWeakenings(cfg);
  sandbox::docker::DockerBackend backend(backendOptions(cfg));
  spdlog::info("instance id {}{}", backend.instanceId(),
               cfg.instance_id.empty() ? " (random; set instance_id for a fleet)" : "");
  // The run-time directory first: it takes the instance id's lock, so a second live server with
  // this id stops here, before it could remove the first one's containers.
  const std::string runtime_root =
      cfg.mcp.runtime_dir.empty() ? sandbox::defaultRuntimeRoot() : cfg.mcp.runtime_dir;
  sandbox::RuntimeDir::removeStale(runtime_root, backend.instanceId(),
                                   sandbox::docker::ProcessIdentity::current());
  sandbox::RuntimeDir runtime_dir(runtime_root, backend.instanceId(), backend.containerLabels());
  if (cfg.sandbox.agent_channel == "socket") backend.useChannelSockets(runtime_dir.path() + "/c");
  const auto sidecars = makeSidecarLauncher(cfg, backend);
  const auto server_endpoints = std::make_shared<server::ServerEndpoints>();
  server::SessionServices services;
  services.sidecars = sidecars.get();
  services.server_endpoints = server_endpoints;
  services.runtime_dir = &runtime_dir;
  services.python_helper_dir =
      runtime_dir.writePythonModule("sandbox_mcp.py", std::string(app::kSandboxMcpPython));

  metrics::Registry metrics_registry;  // first in, last out: the callbacks below refer to it
  const server::SessionMetrics session_metrics(&metrics_registry);
  services.metrics = &session_metrics;
  services.instance_id = backend.instanceId();
  // The pool fills once start-up checked the engine (prepareEngine); over stdio that waits for the
  // client, since the process may be a client's server/discover probe, stopped at once (warm_up.h).
  const bool stdio = options.mode == Mode::kStdio;
  services.pool_start_delay = server::kUntilFillNow;
  const tools::ToolMetrics tool_metrics(&metrics_registry);

  tools::ToolRegistry registry;
  tools::registerBuiltinTools(registry, cfg);
  // Minted session ids end with the instance id, as Mcp-Session-Ids do: a front routes by it.
  server::SessionRegistry sessions(
      cfg, std::make_unique<server::SessionFactory>(cfg, backend, services), backend.instanceId());
  std::vector<config::Principal> principals;
  if (!options.tokens_file.empty()) {
    principals = config::loadPrincipalsFile(options.tokens_file);
    spdlog::info("{} principal(s) from the tokens file {}", principals.size(), options.tokens_file);
  }
  const mcp::PromptCatalog prompts = mcp::productPrompts();
  mcp::ServerFeatures features;
  features.prompts = &prompts;
  auto protocol = std::make_shared<mcp::McpServer>(cfg, sessions, registry, &tool_metrics,
                                                   principals, std::move(features));
  if (cfg.pool.size > 0) {
    spdlog::info(
        "warm pool: keeping {} sandbox(es) of the default profile ready (pool.size){}",
        cfg.pool.size,
        stdio ? fmt::format(", from the first client request or {} ms on", kStdioStartDelay.count())
              : "");
  }
  FleetEndpoints fleet(cfg, backend, sessions, metrics_registry, backend.instanceId());
  registerServerMetrics(metrics_registry, sessions, fleet, backend.engine(), backend.instanceId());
  registerTaskMetrics(metrics_registry, protocol->taskMemory());
  std::optional<preview::PreviewListener> previews;
  if (cfg.preview.enabled()) {
    previews.emplace(cfg.preview, sessions);
    registerPreviewMetrics(metrics_registry, previews->stats());
  }
  Drain drain(std::chrono::seconds(cfg.shutdown.grace_s), sessions, *protocol,
              cfg.sessions.persist);
  std::atomic<const transport::HttpTransport*> http_transport{nullptr};
  metrics_registry.gaugeCallback(
      "sandbox_mcp_mcp_sessions", "MCP sessions (Mcp-Session-Id) open over HTTP.",
      [&http_transport] {
        const auto* transport = http_transport.load();
        return transport != nullptr ? static_cast<double>(transport->sessionCount()) : 0.0;
      });
  Serving serving{cfg,
                  protocol,
                  signals,
                  drain,
                  fleet,
                  metrics_registry,
                  server_endpoints,
                  requestWorkers(cfg),
                  http_transport,
                  principals,
                  nullptr};
  const auto prepare = [&] { return prepareEngine(cfg, backend, sessions); };
  int status = 0;  // 1: start-up found the server cannot serve (it logged why)
  if (previews) previews->start();
  if (stdio) {
    // server/discover is answered before the engine work, which the first other request begins;
    // if that fails, the client gets why as the error of its requests.
    StartUp start_up(prepare, kStdioStartDelay);
    serving.start_up = &start_up;
    serveStdio(serving);
    status = start_up.failed() ? 1 : 0;
  } else if (!prepare().empty()) {
    status = 1;
  } else {
    serveHttp(options, serving);
  }
  signals.finish();
  if (previews) previews->stop();  // its connections hold sessions in use
  sessions.shutdown();
  spdlog::info("stopped; all sandboxes removed");  // saved sessions are on disk, not sandboxes
  return status;
}

}  // namespace

int runServer(const CliOptions& options) noexcept {
  try {
    const auto cfg = loadConfig(options);
    setupLogging(cfg.log_level);
    return serve(options, cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-mcp: %s\n", e.what());
    return 1;
  }
}

int runDoctor(const CliOptions& options) noexcept {
  try {
    const auto cfg = loadConfig(options);
    setupLogging("warn");
    sandbox::docker::DockerBackend backend(backendOptions(cfg));
    bool all_ok = true;
    auto checks = backend.healthChecks();
    for (auto& check : sidecarChecks(cfg, backend)) checks.push_back(std::move(check));
    for (auto& check : sandboxChecks(cfg, backend)) checks.push_back(std::move(check));
    for (const auto& check : checks) {
      std::printf("[%s] %-22s %s\n", check.ok ? " ok " : "FAIL", check.name.c_str(),
                  check.detail.c_str());
      all_ok = all_ok && check.ok;
    }
    std::printf(all_ok ? "\nready: sandbox-mcp can serve.\n"
                       : "\nnot ready: apply the fixes above (scripts/setup.sh installs and "
                         "builds what is missing; a setting named in a check is yours to fix).\n");
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-mcp doctor: %s\n", e.what());
    return 1;
  }
}

}  // namespace app
