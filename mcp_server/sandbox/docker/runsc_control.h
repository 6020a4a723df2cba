// gVisor's own checkpoint for a container that the local engine runs under runsc. Docker's
// checkpoint API is experimental, writes only into its own store and copies the image three times
// (CHECKPOINT_RESTORE_NOTES.md); runsc, called with the engine's state root and the runtime's
// registered arguments, writes one copy where the server wants it. Restoring goes through the
// engine (start?checkpoint=), so the engine keeps managing the container.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandbox::docker {

struct RunscCommand {
  std::string path;                       // e.g. /usr/bin/runsc
  std::vector<std::string> runtime_args;  // the engine's registered runtimeArgs, e.g. --platform
  std::string root;                       // runsc's state root for the engine's containers

  friend bool operator==(const RunscCommand&, const RunscCommand&) = default;
};

// Where dockerd (with containerd's runc v2 shim) keeps runsc's container state.
inline constexpr const char* kDockerRunscRoot = "/run/docker/runtime-runc/moby";

// The command for `runtime` from the engine's GET /info ("Runtimes"); nullopt when the engine
// does not register it or it is not runsc (runc has no checkpoint this server can use).
[[nodiscard]] std::optional<RunscCommand> runscCommandFromInfo(const nlohmann::json& info,
                                                               const std::string& runtime,
                                                               std::string root = kDockerRunscRoot);

// The argument list of `runsc checkpoint` for `container_id` into `dir`: the sandbox keeps
// running (--leave-running; a pause then removes the container, so that a failed checkpoint
// never kills a session) and pages are uncompressed (restore reads them faster).
[[nodiscard]] std::vector<std::string> checkpointArguments(const RunscCommand& command,
                                                           const std::string& container_id,
                                                           const std::filesystem::path& dir);

// Runs `runsc checkpoint` (above). Throws SandboxError with runsc's own words when it fails:
// typically a connection from the sandbox to a host socket that is still open.
void checkpointContainer(const RunscCommand& command, const std::string& container_id,
                         const std::filesystem::path& dir);

// "runsc version 0.0~20240729.0": a checkpoint restores only under the version that wrote it.
[[nodiscard]] std::string runscVersion(const RunscCommand& command);

}  // namespace sandbox::docker
