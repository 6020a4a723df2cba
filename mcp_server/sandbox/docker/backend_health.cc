// DockerBackend's health checks (`sandbox-mcp doctor`, start-up readiness): the engine, the
// runsc runtime and its host-socket flag, the default image and the agent binary (on a remote
// engine: its copy in the agent volume there).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "sandbox/docker/docker_backend.h"

namespace sandbox::docker {

std::vector<HealthCheck> DockerBackend::healthChecks() {
  std::vector<HealthCheck> checks;
  checks.push_back(checkEngine());
  if (!checks.back().ok) return checks;  // everything else needs the engine
  for (auto& check : checkRuntime()) checks.push_back(std::move(check));
  checks.push_back(checkImage());
  checks.push_back(checkAgentBinary());
  // The volume needs the agent and the image; it is what sandboxes on a remote engine run.
  if (agent_volume_ && checks.back().ok && checks[checks.size() - 2].ok) {
    checkAgentVolume(checks.back());
  }
  // Informational: without a freezer idle sessions simply stay running (and use CPU).
  const auto no_freezer = freezeUnsupported();
  checks.push_back({"cgroup freezer", true,
                    no_freezer ? "unavailable (" + *no_freezer +
                                     "): idle sessions stay running, using CPU "
                                     "(sessions.freeze_after_idle_s)"
                               : "available: idle sessions are frozen "
                                 "(sessions.freeze_after_idle_s)"});
  if (agent_volume_) checks.push_back(describeRemoteEngine());
  return checks;
}

// The agent as a remote engine's sandboxes see it: copied into a volume there (filled now when
// missing, so the first session does not pay for it). Named like checkAgentBinary: required.
void DockerBackend::checkAgentVolume(HealthCheck& agent) {
  try {
    agent.detail += ", copied to volume " + agent_volume_->ensure() + " on the engine";
  } catch (const std::exception& e) {
    agent.ok = false;
    agent.detail = e.what();
  }
}

HealthCheck DockerBackend::describeRemoteEngine() const {
  return {"remote engine", true,
          engine_->options().endpoint.uri() +
              " over TLS: sandboxes mount the agent volume (no host path), frames go over "
              "attach; sessions with mcp_allowlist or volumes need a local (unix://) engine"};
}

HealthCheck DockerBackend::checkEngine() {
  HealthCheck check{"docker engine", false, ""};
  try {
    const auto version = engine_->request(Method::kGet, "/version").json();
    check.ok = true;
    const auto& endpoint = engine_->options().endpoint;
    check.detail = "Docker Engine " + version.value("Version", std::string("?")) + " (API " +
                   version.value("ApiVersion", std::string("?")) + ") at " + endpoint.uri() +
                   (endpoint.isTcp()
                        ? " over TLS (client certificate " + engine_->options().tls.cert_file + ")"
                        : "");
  } catch (const std::exception& e) {
    check.detail = std::string(e.what()) + (engine_->remote()
                                                ? ". Fix: check docker.host and docker.tls against "
                                                  "dockerd's -H tcp://... --tlsverify settings"
                                                : ". Fix: start dockerd with scripts/setup.sh");
  }
  return check;
}

std::vector<HealthCheck> DockerBackend::checkRuntime() {
  static constexpr const char* kRuntimeFix =
      "add \"runtimes\": {\"runsc\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": "
      "[\"--network=none\", \"--host-uds=open\"]}} to /etc/docker/daemon.json, then restart "
      "dockerd (scripts/setup.sh does both)";
  HealthCheck registered{"runsc runtime", false, ""};
  HealthCheck host_uds{"runsc --host-uds=open", false, ""};
  nlohmann::json runsc;
  try {
    runsc = engine_->request(Method::kGet, "/info")
                .json()
                .value("Runtimes", nlohmann::json::object())
                .value("runsc", nlohmann::json());
  } catch (const std::exception& e) {
    registered.detail = e.what();
    host_uds.detail = "unknown";
    return {registered, host_uds};
  }
  if (runsc.is_null()) {
    registered.detail = std::string("runsc is not registered with dockerd. Fix: ") + kRuntimeFix;
    host_uds.detail = "runsc is not registered";
    return {registered, host_uds};
  }
  registered.ok = true;
  registered.detail = "runsc registered at " + runsc.value("path", std::string("?"));
  if (engine_->remote()) {
    // Neither the channel socket nor the sidecar socket can reach a sandbox on another machine.
    host_uds.ok = true;
    host_uds.detail = "not needed: sandboxes on a remote engine use no host socket";
    return {registered, host_uds};
  }

  // The engine reports runtimeArgs in /info; older engines only have them in daemon.json.
  nlohmann::json args = runsc.value("runtimeArgs", nlohmann::json());
  std::string source = "dockerd /info";
  if (!args.is_array()) {
    std::ifstream in("/etc/docker/daemon.json");
    const auto config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (config.is_object()) {
      args = config.value("runtimes", nlohmann::json::object())
                 .value("runsc", nlohmann::json::object())
                 .value("runtimeArgs", nlohmann::json::array());
      source = "/etc/docker/daemon.json";
    }
  }
  if (!args.is_array()) {
    host_uds.ok = false;
    host_uds.detail =
        "unknown: dockerd does not report runsc's runtimeArgs and "
        "/etc/docker/daemon.json is unreadable; make sure they include "
        "--host-uds=open";
    return {registered, host_uds};
  }
  const bool has_host_uds = std::any_of(args.begin(), args.end(), [](const nlohmann::json& arg) {
    return arg.is_string() && (arg == "--host-uds=open" || arg == "--host-uds=all");
  });
  host_uds.ok = has_host_uds;
  host_uds.detail = has_host_uds ? "runtimeArgs " + args.dump() + " (from " + source + ")"
                                 : "runtimeArgs " + args.dump() +
                                       " lack --host-uds=open, so sandboxes cannot reach "
                                       "their channel socket (frames fall back to the slower "
                                       "attach stream) or the sidecar socket. Fix: " +
                                       kRuntimeFix;
  return {registered, host_uds};
}

HealthCheck DockerBackend::checkImage() {
  HealthCheck check{"default image", false, ""};
  try {
    const auto facts = inspectImage(options_.default_image);
    check.ok = facts.has_value();
    if (!check.ok) {
      check.detail = options_.default_image +
                     " is missing. Fix: docker/build-images.sh (images cannot be pulled here)";
      return check;
    }
    check.detail = options_.default_image + " is present";
    const auto& labels = facts->labels;
    if (const auto recipe = labels.find("sandbox-mcp.recipe"); recipe != labels.end()) {
      check.detail += " (docker/build-images.sh recipe " + recipe->second + ")";
    } else if (labels.contains("sandbox-mcp.image")) {
      // Built by the script before images carried a recipe: the Python-only image.
      check.detail +=
          ", built by an older docker/build-images.sh (Python only: no numpy, pandas, matplotlib "
          "or Node.js). Fix: scripts/setup.sh rebuilds it";
    }
  } catch (const std::exception& e) {
    check.detail = e.what();
  }
  return check;
}

HealthCheck DockerBackend::checkAgentBinary() const {
  HealthCheck check{"sandbox agent", false, ""};
  struct stat info {};
  if (options_.agent_path.empty()) {
    check.detail =
        "no agent path configured. Fix: build it with `cmake --build build --target "
        "sandbox-agent` and pass its path";
  } else if (::stat(options_.agent_path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
             ::access(options_.agent_path.c_str(), X_OK) != 0) {
    check.detail = options_.agent_path +
                   " is missing or not executable. Fix: cmake --build build --target "
                   "sandbox-agent";
  } else {
    check.ok = true;
    check.detail = options_.agent_path + " (" + std::to_string(info.st_size) + " bytes)";
  }
  return check;
}

}  // namespace sandbox::docker
