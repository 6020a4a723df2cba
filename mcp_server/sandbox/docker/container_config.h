// Builds the POST /containers/create body for a SandboxSpec: the agent as the command, no
// network, read-only root, tmpfs scratch space, every capability dropped, hard resource limits.
// Pure, thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/backend.h"

namespace sandbox::docker {

inline constexpr const char* kAgentContainerPath = "/.sandbox/agent";
inline constexpr const char* kPythonHelperContainerPath = "/.sandbox/python";
inline constexpr const char* kChannelContainerPath = "/.sandbox/channel";

// Throws SandboxError naming the offending field when the spec cannot be honoured.
void validateSpec(const SandboxSpec& spec);

// `ownership_labels` override same-named labels from the spec (a spec cannot claim another
// server's sandbox). `channel_host_dir` (empty: none) is mounted read-only at
// /.sandbox/channel: the directory of the agent's channel socket (channel_listener.h).
[[nodiscard]] nlohmann::json containerCreateBody(
    const SandboxSpec& spec, const std::string& agent_host_path,
    const std::map<std::string, std::string>& ownership_labels,
    const std::string& channel_host_dir = {});

// Tmpfs options string, e.g. "rw,nosuid,nodev,exec,size=256m,mode=1777".
[[nodiscard]] std::string tmpfsOptions(std::int64_t size_mib);

}  // namespace sandbox::docker
