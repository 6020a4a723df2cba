// One sandbox container with a live agent channel: over a Unix socket (channel_listener.h) or, when
// the runtime offers none, over its attached stdio. Created by DockerBackend. Thread-safe: exec
// and file operations may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>

#include "sandbox/agent_channel.h"
#include "sandbox/agent_client.h"
#include "sandbox/backend.h"
#include "sandbox/docker/channel_listener.h"
#include "sandbox/docker/container_cgroup.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/runsc_control.h"

namespace sandbox::docker {

struct ContainerRecord {
  std::string id;
  std::string name;
  std::string image;
  std::string runtime;
  std::int64_t memory_mib = 0;
  std::int64_t created_unix = 0;  // for reading its events
};

// How the server reaches one sandbox's agent.
struct AgentLink {
  std::shared_ptr<AgentChannel> channel;  // requests and replies
  // The attached stdio: keeps the agent's stdin open (its end stops the agent) and carries its
  // stderr. The same object as `channel` when there is no socket.
  std::shared_ptr<AgentChannel> attached;
  std::unique_ptr<ChannelListener>
      socket_dir;  // null without a socket; removed after the container
};

// A write to the agent that cannot finish this long means it stopped reading.
inline constexpr std::chrono::milliseconds kAgentSendTimeout{30000};

// Sends "channel" over `attached` and takes the agent's connection on `listener`: the socket
// channel, or nullptr and the agent's reason when it could not connect (frames stay on stdio).
// Throws SandboxError when the agent stops or the connection does not come.
struct SocketChannel {
  std::shared_ptr<AgentChannel> channel;
  std::string refusal;
};
[[nodiscard]] SocketChannel openSocketChannel(AgentChannel& attached, ChannelListener& listener,
                                              std::chrono::milliseconds timeout,
                                              const std::string& name);

// What a sandbox needs to checkpoint itself; runsc null: it cannot.
struct CheckpointSupport {
  std::shared_ptr<const RunscCommand> runsc;
  std::chrono::milliseconds link_timeout{15000};  // for the agent to reconnect afterwards
};

class DockerSandbox final : public Sandbox {
 public:
  // How long to wait for the engine to report the container's exit once the channel closed.
  inline static constexpr std::chrono::milliseconds kFateWait{3000};

  // `host_cgroups`: the engine shares the server's host, so the container's cgroup can be
  // frozen and read (freeze(), usage()).
  DockerSandbox(std::shared_ptr<EngineClient> engine, ContainerRecord record, AgentLink link,
                nlohmann::json hello, CheckpointSupport checkpoints = {},
                bool host_cgroups = false);
  ~DockerSandbox() override;  // closes the channel and force-removes the container
  DockerSandbox(const DockerSandbox&) = delete;
  DockerSandbox& operator=(const DockerSandbox&) = delete;

  [[nodiscard]] const std::string& id() const noexcept override { return record_.id; }
  [[nodiscard]] const std::string& runtime() const noexcept override { return record_.runtime; }
  [[nodiscard]] const std::string& image() const noexcept override { return record_.image; }
  [[nodiscard]] std::string status() override;
  [[nodiscard]] bool alive() const noexcept override;
  [[nodiscard]] std::optional<std::string> stopReason() override;

  ExecResult exec(const ExecRequest& request, CancelToken& cancel,
                  const OutputCallback& on_output) override;
  std::size_t writeFile(const std::string& path, std::string_view bytes, int mode) override;
  std::string readFile(const std::string& path, std::size_t max_bytes) override;
  FileRange readFileRange(const std::string& path, std::uint64_t offset,
                          std::size_t length) override;
  FileListing listFiles(const std::string& path) override;
  // Needs the socket channel (the engine on the server's host): the agent connects a PortDoor in
  // the channel's directory and relays it to the port.
  common::UniqueFd openPort(std::uint16_t port) override;
  // For the agent's answer to open_port, and then for its connection to the door.
  inline static constexpr std::chrono::milliseconds kOpenPortWait{5000};
  // Suspends the agent's socket channel, runs runsc checkpoint (the sandbox keeps running) and
  // gives the agent a new channel. Waits up to kCheckpointWait for calls in flight to finish.
  void checkpoint(const std::filesystem::path& dir) override;
  inline static constexpr std::chrono::milliseconds kCheckpointWait{3000};
  // With the host's cgroup freezer (container_cgroup.h); every call, checkpoint and the removal
  // thaw it first.
  bool freeze() override;
  [[nodiscard]] bool frozen() const noexcept override { return frozen_.load(); }
  [[nodiscard]] std::optional<Usage> usage() override;
  // A freeze that takes longer is undone (a process in an uninterruptible wait).
  inline static constexpr std::chrono::milliseconds kFreezeWait{1000};

  [[nodiscard]] const std::string& name() const noexcept { return record_.name; }
  // The agent's hello reply (agent_version, python, python_version, pid, uid, cwd).
  [[nodiscard]] const nlohmann::json& hello() const noexcept { return hello_; }
  // Closes the channel without removing the container, like a crashed server would (tests).
  void dropChannelForTesting() noexcept {
    currentChannel()->close("dropped for testing");
    attached_->close("dropped for testing");
  }
  // True when frames travel over the channel socket rather than the attached stdio.
  [[nodiscard]] bool usesChannelSocket() const noexcept { return socket_dir_ != nullptr; }

 private:
  // Calls the agent; an ok:false reply becomes SandboxError(its "error"), a closed channel
  // becomes SandboxError(stop reason).
  nlohmann::json callAgent(nlohmann::json request, std::chrono::milliseconds deadline,
                           const AgentChannel::CallOptions& options = {});
  std::string resolveStopReason();
  [[nodiscard]] std::shared_ptr<AgentChannel> currentChannel() const;
  // After a checkpoint: a new socket channel (true), or the sandbox is closed (alive() false)
  // and its stop reason says why.
  bool relink();
  // Thaws a frozen sandbox; false when it stays frozen (its freezer file cannot be written).
  bool thaw() noexcept;
  // thaw(), or a SandboxError a caller can act on.
  void thawOrThrow();
  // The container's cgroup, found on first use (an engine inspect); nullptr when it cannot be
  // reached. cgroup_mutex_ held.
  ContainerCgroup* cgroupLocked();

  std::shared_ptr<EngineClient> engine_;
  const ContainerRecord record_;
  // Calls hold it shared; a checkpoint holds it alone (no frame may cross while the channel
  // moves).
  mutable std::shared_timed_mutex calls_mutex_;
  mutable std::mutex channel_mutex_;  // guards channel_ (read by alive() at any time)
  std::shared_ptr<AgentChannel> channel_;
  std::shared_ptr<AgentChannel> attached_;
  std::unique_ptr<ChannelListener> socket_dir_;
  std::atomic<bool> relinking_{false};  // the socket channel is down on purpose: ask attached_
  const CheckpointSupport checkpoints_;
  const AgentClient agent_;
  const nlohmann::json hello_;
  std::mutex stop_reason_mutex_;
  std::optional<std::string> stop_reason_;
  const bool host_cgroups_;
  std::mutex cgroup_mutex_;  // guards cgroup_ and cgroup_tried_; taken after calls_mutex_
  std::optional<ContainerCgroup> cgroup_;
  bool cgroup_tried_ = false;
  std::atomic<bool> frozen_{false};
};

// DELETE /containers/{id}?force=1&v=1 (anonymous volumes too), ignoring "already gone" and "removal
// in progress". The engine cannot remove a frozen container until it is thawed: a DockerSandbox
// thaws itself first, the orphan sweep thaws what a crashed server left (thawContainer).
void forceRemoveContainer(EngineClient& engine, const std::string& id) noexcept;
// Thaws the container when it is frozen on this host (a local engine); true when it was.
bool thawContainer(EngineClient& engine, const std::string& id) noexcept;

// Reads the container's exit from the engine (briefly) and words it for a user; falls back to
// `fallback` when the engine has no exit to report.
[[nodiscard]] std::string explainStop(EngineClient& engine, const ContainerRecord& record,
                                      const std::string& fallback);

}  // namespace sandbox::docker
