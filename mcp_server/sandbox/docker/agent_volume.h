// The agent for engines on another machine (docker.host tcp://), which cannot bind-mount anything
// of the server's host: the static sandbox-agent and the server's Python helper modules go into a
// named volume on the engine, sandbox-mcp-agent-<16 hex of SHA-256 of the contents>, labelled
// with that hash; every sandbox mounts it read-only at /.sandbox (the agent at /.sandbox/agent,
// the modules in /.sandbox/python). It is filled once per engine through a never-started helper
// container (PUT /containers/{id}/archive of a tar written here, a marker file last, so a fill
// cut short is redone) and reused while the contents match; a new agent build makes a new volume.
// Old volumes stay on the engine (a few MiB each; `docker volume rm` them when no sandbox uses
// them). Thread-safe: ensure() serializes.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

inline constexpr std::string_view kAgentVolumePrefix = "sandbox-mcp-agent-";
inline constexpr const char* kLabelAgentVolume = "sandbox-mcp.agent-volume";  // the content hash
inline constexpr const char* kAgentVolumeMarker = ".complete";  // written last; holds the hash

struct AgentVolumeContents {
  std::string agent;                                  // the sandbox-agent binary
  std::map<std::string, std::string> python_modules;  // file name -> source
};

// Hash of everything the volume holds. Pure.
[[nodiscard]] std::string agentVolumeHash(const AgentVolumeContents& contents);
// The tar extracted at the volume's root: agent, python/<modules>, then the marker. Pure.
[[nodiscard]] std::string agentVolumeArchive(const AgentVolumeContents& contents,
                                             const std::string& hash);

class AgentVolume {
 public:
  // `helper_image` must exist on the engine (the helper container is never started).
  // `labels` go on the helper container (ownership: a crashed fill gets swept as an orphan).
  AgentVolume(EngineClient& engine, std::string agent_path,
              std::map<std::string, std::string> python_modules, std::string helper_image,
              std::map<std::string, std::string> labels);

  // The volume's name, made and filled first when the engine lacks it. Re-reads the agent binary
  // when its file changed. Throws SandboxError saying what to fix.
  std::string ensure();
  // Checks the engine again at the next ensure() (after a sandbox whose agent did not start:
  // someone may have removed the volume, and the engine then mounts an empty one).
  void forget();

 private:
  using FileKey = std::tuple<dev_t, ino_t, off_t, std::int64_t, std::int64_t>;

  void prepare(const std::string& name, const std::string& hash,
               const AgentVolumeContents& contents);
  // Whether the volume exists; throws when a volume of that name is not ours.
  bool volumeExists(const std::string& name, const std::string& hash);

  EngineClient& engine_;
  std::string agent_path_;
  std::map<std::string, std::string> python_modules_;
  std::string helper_image_;
  std::map<std::string, std::string> labels_;
  std::mutex mutex_;
  FileKey ready_key_{};
  std::string ready_name_;  // empty until prepared
};

}  // namespace sandbox::docker
