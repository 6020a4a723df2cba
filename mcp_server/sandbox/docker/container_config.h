// Builds the POST /containers/create body for a SandboxSpec: the agent as the command, no
// network, read-only root, tmpfs scratch space, every capability dropped, hard resource limits.
// Pure, thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "sandbox/backend.h"

namespace sandbox::docker {

inline constexpr const char* kSandboxDirContainerPath = "/.sandbox";
inline constexpr const char* kAgentContainerPath = "/.sandbox/agent";
inline constexpr const char* kPythonHelperContainerPath = "/.sandbox/python";
inline constexpr const char* kChannelContainerPath = "/.sandbox/channel";

// Where a sandbox gets the agent (and the server's Python helpers) from.
struct AgentMounts {
  // A local engine: bind mounts from this host, read-only. The agent binary at /.sandbox/agent;
  // `channel_host_dir` (empty: none) at /.sandbox/channel, the directory of the agent's channel
  // socket (channel_listener.h); spec.python_helper_dir at /.sandbox/python.
  std::string agent_host_path;
  std::string channel_host_dir;
  // A remote engine (non-empty): this named volume, read-only at /.sandbox, holding the agent and
  // python/ (agent_volume.h); nothing of this host is mounted and host volumes are refused.
  std::string volume;

  [[nodiscard]] static AgentMounts fromHost(std::string agent, std::string channel_dir = {}) {
    return {std::move(agent), std::move(channel_dir), {}};
  }
  [[nodiscard]] static AgentMounts fromVolume(std::string volume) {
    return {{}, {}, std::move(volume)};
  }
};

// Throws SandboxError naming the offending field when the spec cannot be honoured.
void validateSpec(const SandboxSpec& spec);

// For a remote engine: throws SandboxError, saying what to use instead, when the spec would
// mount a path of this host (spec.volumes, the MCP sidecar's socket directory among them).
void refuseHostMounts(const SandboxSpec& spec);

// `ownership_labels` override same-named labels from the spec (a spec cannot claim another
// server's sandbox).
[[nodiscard]] nlohmann::json containerCreateBody(
    const SandboxSpec& spec, const AgentMounts& mounts,
    const std::map<std::string, std::string>& ownership_labels);

// Tmpfs options string, e.g. "rw,nosuid,nodev,exec,size=256m,mode=1777".
[[nodiscard]] std::string tmpfsOptions(std::int64_t size_mib);

}  // namespace sandbox::docker
