// sandbox::Backend on the Docker Engine API: each sandbox is a container running the static
// sandbox-agent as PID 1 (bind-mounted read-only; on a remote engine from a read-only volume,
// agent_volume.h), normally under gVisor (runsc).
// Thread-safe: create() and the other calls may run concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/backend.h"
#include "sandbox/docker/agent_volume.h"
#include "sandbox/docker/built_images.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/docker_sandbox.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/ownership.h"
#include "sandbox/docker/runsc_control.h"

namespace sandbox::docker {

class AttachStream;
class ContainerRemover;

struct DockerBackendOptions {
  // unix:///path (an engine on this host) or tcp://HOST:PORT with `tls` (an engine anywhere:
  // sandboxes then get the agent from a volume on it, frames go over attach, and no host path
  // is mounted). common/engine_host.h has the grammar.
  std::string host = "unix:///var/run/docker.sock";
  EngineTlsFiles tls;                 // tcp:// only, then all three files are required
  std::string api_version = "v1.41";  // the engine here is 20.10
  std::string agent_path;             // host path of the static sandbox-agent binary
  // A remote engine's copy of the server's Python helpers (file name -> source), put in the
  // agent volume at /.sandbox/python; a local engine bind-mounts spec.python_helper_dir instead.
  std::map<std::string, std::string> python_modules;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds hello_timeout{15000};           // from start until the agent answers
  std::string default_image = "sandbox-mcp/python:latest";  // checked by healthChecks()
  std::string instance_id;                    // this server instance; empty: a random one
  std::map<std::string, std::string> labels;  // added to every container
  BuiltImageRetention built_images;           // garbage collection of built images
};

class DockerBackend final : public Backend {
 public:
  explicit DockerBackend(DockerBackendOptions options);
  ~DockerBackend() override;
  DockerBackend(const DockerBackend&) = delete;
  DockerBackend& operator=(const DockerBackend&) = delete;

  // Creates, attaches, starts and greets a container; on any failure it is removed again.
  std::unique_ptr<Sandbox> create(const SandboxSpec& spec) override;
  [[nodiscard]] bool imageExists(const std::string& image) override;
  [[nodiscard]] std::optional<ImageFacts> inspectImage(const std::string& image) override;
  // Our own builder (image_builder.h), never dockerd's /build; then garbage-collects.
  std::string buildImage(const BuildRequest& request, const CancelToken& cancel) override;
  [[nodiscard]] std::vector<std::string> runtimes() override;
  // See ownership.h for the rule that decides what is an orphan. Also collects built images.
  int removeOrphans() override;
  // Removes built images past their retention (built_images.h); returns how many.
  int collectBuiltImages() noexcept;
  [[nodiscard]] std::vector<HealthCheck> healthChecks() override;
  // Local engine, runsc, "experimental" on (start?checkpoint=), the engine's directory writable.
  [[nodiscard]] std::optional<std::string> checkpointUnsupported(
      const std::string& runtime) override;
  [[nodiscard]] std::string checkpointFormat(const std::string& runtime) override;
  // A local engine and a cgroup freezer on this host the server may write.
  [[nodiscard]] std::optional<std::string> freezeUnsupported() override;
  // A new container with the same mounts (new channel and its socket), the checkpoint's files in
  // its own checkpoints directory, started from them by the engine; then the agent's channel.
  std::unique_ptr<Sandbox> restore(const SandboxSpec& spec, const PlaceCheckpoint& place) override;

  // Frames to and from agents then travel over a Unix socket per sandbox, in a directory under
  // `root` bind-mounted into the sandbox (channel_listener.h), instead of the attached stdio: no
  // dockerd and containerd-shim in the path (bench/: lower latency, 10 MiB files several times
  // faster). The server and the engine must share a host: with a remote (tcp://) engine this
  // keeps the attached stdio and says so once. An agent that cannot connect (a runtime without
  // --host-uds=open) keeps the attached stdio, with a warning. Call before create().
  void useChannelSockets(std::string root);
  // Whether the engine is reached over tcp:// (it runs on another machine).
  [[nodiscard]] bool remote() const noexcept { return engine_->remote(); }

  [[nodiscard]] const std::string& instanceId() const noexcept { return options_.instance_id; }
  [[nodiscard]] EngineClient& engine() noexcept { return *engine_; }
  [[nodiscard]] std::shared_ptr<EngineClient> sharedEngine() const noexcept { return engine_; }
  // The labels that mark this server's containers (other containers it starts carry them too).
  [[nodiscard]] const std::map<std::string, std::string>& containerLabels() const noexcept {
    return ownership_labels_;
  }

 private:
  HealthCheck checkEngine();
  std::vector<HealthCheck> checkRuntime();
  HealthCheck checkImage();
  HealthCheck checkAgentBinary() const;
  void checkAgentVolume(HealthCheck& agent);
  HealthCheck describeRemoteEngine() const;
  // What create() mounts for the agent: host binds, or the agent volume of a remote engine.
  AgentMounts agentMounts(const SandboxSpec& spec, const ChannelListener* listener);
  // A created (not started) container with its attach channel; removed again unless dismissed.
  struct NewContainer {
    ContainerRecord record;
    std::unique_ptr<ChannelListener> listener;
    std::shared_ptr<AgentChannel> channel;  // over the attach stream
    const AttachStream* attach = nullptr;   // owned by `channel`
    std::unique_ptr<ContainerRemover> remover;
  };
  NewContainer createContainer(const SandboxSpec& spec);
  // "<what>: " and how the container ended (else `otherwise`), and the agent's stderr.
  std::string describeFailedStart(const NewContainer& made, const SandboxSpec& spec,
                                  const std::string& what, const std::string& otherwise);
  // What the engine says about itself (GET /info), read once.
  struct EngineFacts {
    std::string root_dir;  // DockerRootDir
    bool experimental = false;
    std::map<std::string, std::shared_ptr<const RunscCommand>> runsc;  // by runtime name
    std::map<std::string, std::string> versions;                       // by runsc path
  };
  const EngineFacts& engineFacts();
  CheckpointSupport checkpointSupport(const std::string& runtime);
  // After hello: moves the frames to the socket when the agent can reach it, else keeps `attached`.
  AgentLink linkAgent(std::shared_ptr<AgentChannel> attached,
                      std::unique_ptr<ChannelListener> listener, const std::string& name);

  DockerBackendOptions options_;
  std::shared_ptr<EngineClient> engine_;
  ProcessIdentity self_;
  std::map<std::string, std::string> ownership_labels_;
  std::string channel_root_;                   // empty: frames use the attached stdio
  std::unique_ptr<AgentVolume> agent_volume_;  // remote engines only
  std::atomic<bool> warned_no_socket_{false};
  std::mutex engine_facts_mutex_;
  std::optional<EngineFacts> engine_facts_;
};

// First 16 hex digits of SHA-256(text), via OpenSSL EVP. Pure.
[[nodiscard]] std::string shortContentHash(std::string_view text);

}  // namespace sandbox::docker
