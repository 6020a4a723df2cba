// The agent for engines on another machine (docker.host tcp://), which cannot bind-mount anything
// of the server's host: the static sandbox-agent and the server's Python helper modules go into a
// named volume on the engine, sandbox-mcp-agent-<16 hex of SHA-256 of the contents>, labelled
// with that hash; every sandbox mounts it read-only at /.sandbox (the agent at /.sandbox/agent,
// the modules in /.sandbox/python). It is filled once per engine through a never-started helper
// container (PUT /containers/{id}/archive of a tar written here, a marker file last, so a fill
// cut short is redone) and reused while the contents match; a new agent build makes a new volume.
// Servers sharing an engine (replicas) take turns: the helper container has a fixed name,
// <volume>-fill, which only one of them can create; it checks the marker and fills only when the
// marker is missing. The others wait for that name to be free (at most fill_times.wait) and then
// find the marker: a volume is never extracted into twice at once, so no sandbox sees its files
// unlinked and recreated. A <volume>-fill container older than fill_times.stale_after is a
// crashed fill's and is removed.
// Old volumes stay on the engine (about 20 MiB each: the static agent with its debug information
// is 20 MiB in the asan-ubsan and the release build alike, as the agent is never built with
// sanitizers, 2.4 MiB stripped; `docker volume rm` them when no sandbox uses them).
// Thread-safe: ensure() serializes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

inline constexpr std::string_view kAgentVolumePrefix = "sandbox-mcp-agent-";
inline constexpr const char* kLabelAgentVolume = "sandbox-mcp.agent-volume";  // the content hash
inline constexpr const char* kAgentVolumeMarker = ".complete";       // written last; holds the hash
inline constexpr std::string_view kAgentVolumeFillSuffix = "-fill";  // the helper: <volume>-fill

// How long ensure() waits for another server's fill, and when a fill container counts as
// abandoned. stale_after exceeds the longest a fill can take (its upload times out after 120 s);
// ages are the engine's creation time against this host's clock.
struct AgentVolumeFillTimes {
  std::chrono::milliseconds wait{60000};
  std::chrono::seconds stale_after{180};
};

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
              std::map<std::string, std::string> labels, AgentVolumeFillTimes fill_times = {});

  // The volume's name, made and filled first when the engine lacks it (waiting while another
  // server fills it). Re-reads the agent binary when its file changed. Throws SandboxError
  // saying what to fix.
  std::string ensure();
  // Checks the engine again at the next ensure() (after a sandbox whose agent did not start:
  // someone may have removed the volume, and the engine then mounts an empty one).
  void forget();

 private:
  using FileKey = std::tuple<dev_t, ino_t, off_t, std::int64_t, std::int64_t>;

  void prepare(const std::string& name, const std::string& hash,
               const AgentVolumeContents& contents);
  // Creates <volume>-fill, waiting while another server holds that name; returns its id.
  std::string claimFill(const std::string& volume);
  // Whether the volume exists; throws when a volume of that name is not ours.
  bool volumeExists(const std::string& name, const std::string& hash);

  EngineClient& engine_;
  std::string agent_path_;
  std::map<std::string, std::string> python_modules_;
  std::string helper_image_;
  std::map<std::string, std::string> labels_;
  AgentVolumeFillTimes fill_times_;
  std::mutex mutex_;
  FileKey ready_key_{};
  std::string ready_name_;  // empty until prepared
};

}  // namespace sandbox::docker
