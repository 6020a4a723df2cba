#include "sandbox/docker/container_config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace sandbox::docker {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1024} * 1024;

bool isAbsolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

// Binds are "host:container:mode" strings: a ':' or ',' inside a path would be misparsed.
void requireBindablePath(const std::string& path, const std::string& field) {
  if (!isAbsolute(path))
    throw SandboxError(field + " must be an absolute path, got '" + path + "'");
  if (path.find_first_of(":,") != std::string::npos) {
    throw SandboxError(field + " must not contain ':' or ',', got '" + path + "'");
  }
}

bool isDecimal(std::string_view text) {
  return !text.empty() && text.size() <= 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool isNumericUser(std::string_view user) {
  const auto colon = user.find(':');
  return colon != std::string_view::npos && isDecimal(user.substr(0, colon)) &&
         isDecimal(user.substr(colon + 1));
}

// "PORT=/absolute/socket", as the agent's --egress-proxy takes it (the agent checks the range).
bool isEgressProxyValue(std::string_view value) {
  const auto equals = value.find('=');
  return equals != std::string_view::npos && isDecimal(value.substr(0, equals)) &&
         equals + 1 < value.size() && value[equals + 1] == '/';
}

}  // namespace

void validateSpec(const SandboxSpec& spec) {
  if (spec.image.empty()) throw SandboxError("spec.image is empty; name an image to run");
  if (spec.runtime.empty()) throw SandboxError("spec.runtime is empty; use runsc or runc");
  const Limits& limits = spec.limits;
  if (limits.memory_mib < 16) throw SandboxError("limits.memory_mib must be at least 16");
  if (limits.cpus <= 0) throw SandboxError("limits.cpus must be positive");
  if (limits.pids < 16) throw SandboxError("limits.pids must be at least 16 (runsc needs ~40)");
  if (limits.tmp_size_mib <= 0 || limits.workdir_size_mib <= 0) {
    throw SandboxError("limits.tmp_size_mib and limits.workdir_size_mib must be positive");
  }
  requireBindablePath(spec.workdir, "spec.workdir");
  if (spec.workdir == "/") throw SandboxError("spec.workdir must not be '/'");
  for (const auto& volume : spec.volumes) {
    requireBindablePath(volume.host_path, "volumes[].host_path");
    requireBindablePath(volume.container_path, "volumes[].container_path");
    if (volume.container_path == "/" || volume.container_path.rfind("/.sandbox", 0) == 0) {
      throw SandboxError("volumes[].container_path '" + volume.container_path +
                         "' would hide the system or the agent; pick another directory");
    }
  }
  if (!spec.python_helper_dir.empty()) {
    requireBindablePath(spec.python_helper_dir, "spec.python_helper_dir");
  }
  if (!spec.user.empty() && !isNumericUser(spec.user)) {
    throw SandboxError("spec.user must be numeric 'uid:gid' (e.g. 65534:65534), got '" + spec.user +
                       "'");
  }
  if (!spec.egress_proxy.empty() && !isEgressProxyValue(spec.egress_proxy)) {
    throw SandboxError(
        "spec.egress_proxy must be 'PORT=/absolute/socket/path' (e.g. "
        "3128=/run/mcp/egress.sock), got '" +
        spec.egress_proxy + "'");
  }
  for (const auto& [key, value] : spec.environment) {
    if (key.empty() || key.find('=') != std::string::npos) {
      throw SandboxError("environment variable name '" + key + "' is invalid");
    }
  }
}

void refuseHostMounts(const SandboxSpec& spec) {
  if (spec.volumes.empty()) return;
  const auto& volume = spec.volumes.front();
  throw SandboxError(
      "mcp_allowlist and volumes are not available with this server: its Docker engine "
      "(docker.host tcp://) runs on another machine, and sandboxes there get no mount from the "
      "server's host (this one asked for " +
      volume.host_path + " at " + volume.container_path +
      "; the MCP sidecar's socket directory is such a mount). Omit them, or use a server whose "
      "docker.host is a local unix:// socket for these sessions");
}

std::string tmpfsOptions(std::int64_t size_mib) {
  // Docker mounts tmpfs noexec unless told otherwise; running what you just compiled or
  // pip-installed is the point of a code sandbox, and the isolation boundary is gVisor.
  return "rw,nosuid,nodev,exec,size=" + std::to_string(size_mib) + "m,mode=1777";
}

namespace {

// The volume of a remote engine at /.sandbox, or the host's agent, channel and helper binds.
void addAgentMounts(const SandboxSpec& spec, const AgentMounts& mounts, nlohmann::json& binds,
                    nlohmann::json& volume_mounts) {
  if (!mounts.volume.empty()) {
    refuseHostMounts(spec);
    volume_mounts.push_back({{"Type", "volume"},
                             {"Source", mounts.volume},
                             {"Target", kSandboxDirContainerPath},
                             {"ReadOnly", true},
                             {"VolumeOptions", {{"NoCopy", true}}}});
    return;
  }
  requireBindablePath(mounts.agent_host_path, "the agent path");
  binds.push_back(mounts.agent_host_path + ":" + kAgentContainerPath + ":ro");
  if (!mounts.channel_host_dir.empty()) {
    requireBindablePath(mounts.channel_host_dir, "the agent channel directory");
    binds.push_back(mounts.channel_host_dir + ":" + kChannelContainerPath + ":ro");
  }
  if (!spec.python_helper_dir.empty()) {
    binds.push_back(spec.python_helper_dir + ":" + kPythonHelperContainerPath + ":ro");
  }
}

// The agent's command line: PID 1 of the container.
nlohmann::json agentCommand(const SandboxSpec& spec) {
  nlohmann::json command = {kAgentContainerPath};
  if (!spec.user.empty()) command.insert(command.end(), {"--code-user", spec.user});
  if (!spec.egress_proxy.empty()) {
    command.insert(command.end(), {"--egress-proxy", spec.egress_proxy});
  }
  return command;
}

}  // namespace

nlohmann::json containerCreateBody(const SandboxSpec& spec, const AgentMounts& mounts,
                                   const std::map<std::string, std::string>& ownership_labels) {
  validateSpec(spec);
  auto environment = spec.environment;
  if (!spec.python_helper_dir.empty()) {
    auto& python_path = environment["PYTHONPATH"];
    python_path = python_path.empty() ? std::string(kPythonHelperContainerPath)
                                      : std::string(kPythonHelperContainerPath) + ":" + python_path;
  }
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [key, value] : environment) env.push_back(key + "=" + value);

  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : spec.labels) labels[key] = value;
  for (const auto& [key, value] : ownership_labels) labels[key] = value;

  nlohmann::json binds = nlohmann::json::array();
  nlohmann::json volume_mounts = nlohmann::json::array();
  addAgentMounts(spec, mounts, binds, volume_mounts);
  for (const auto& volume : spec.volumes) {
    binds.push_back(volume.host_path + ":" + volume.container_path +
                    (volume.read_only ? ":ro" : ":rw"));
  }

  nlohmann::json tmpfs = nlohmann::json::object();
  tmpfs["/tmp"] = tmpfsOptions(spec.limits.tmp_size_mib);
  if (spec.workdir != "/tmp") tmpfs[spec.workdir] = tmpfsOptions(spec.limits.workdir_size_mib);

  const std::int64_t memory_bytes = spec.limits.memory_mib * kMiB;
  nlohmann::json host_config = {
      {"NetworkMode", "none"},
      {"Runtime", spec.runtime},
      {"Memory", memory_bytes},
      {"MemorySwap", memory_bytes},  // equal to Memory: no swap
      {"NanoCpus", static_cast<std::int64_t>(std::llround(spec.limits.cpus * 1e9))},
      {"PidsLimit", spec.limits.pids},
      {"CapDrop", {"ALL"}},
      // With a code user the agent starts as root holding only these two, moves itself to
      // real uid 0 / effective uid `user` (no effective capability left) and runs every child
      // as `user` entirely: code then cannot open /proc/1/fd/*, ptrace or signal the agent
      // (agent/credentials.h). no-new-privileges keeps the children from ever regaining them.
      {"CapAdd", spec.user.empty() ? nlohmann::json::array() : nlohmann::json{"SETUID", "SETGID"}},
      {"SecurityOpt", {"no-new-privileges"}},
      {"ReadonlyRootfs", spec.read_only_root},
      {"Tmpfs", tmpfs},
      {"Binds", binds},
      {"Mounts", volume_mounts},
      // When the server dies its attach connection closes, the agent sees EOF on stdin and
      // exits, and the engine removes the container: a crash leaves nothing running.
      {"AutoRemove", true},
      {"Init", false},  // the agent is PID 1 and reaps its children itself
      {"IpcMode", "private"},
      // The agent's stderr also goes to the engine's log driver; sandbox code can make the agent
      // write there (every malformed line it sends is reported), so the log must not grow
      // without bound on the host. The server reads stderr through attach; this copy is only
      // for `docker logs`.
      {"LogConfig", {{"Type", "json-file"}, {"Config", {{"max-size", "1m"}, {"max-file", "1"}}}}},
  };

  nlohmann::json body = {
      {"Image", spec.image},
      {"Cmd", agentCommand(spec)},
      {"Entrypoint", nlohmann::json::array()},  // ignore the image's entrypoint
      {"Env", env},
      {"WorkingDir", spec.workdir},
      {"Labels", labels},
      {"OpenStdin", true},
      {"StdinOnce", true},  // stdin closes when our attach connection closes
      {"AttachStdin", true},
      {"AttachStdout", true},
      {"AttachStderr", true},
      {"Tty", false},  // keep stdout and stderr apart (multiplexed stream)
      {"NetworkDisabled", true},
      {"HostConfig", host_config},
  };
  if (!spec.user.empty()) body["User"] = "0:0";  // the agent drops to spec.user itself
  return body;
}

}  // namespace sandbox::docker
