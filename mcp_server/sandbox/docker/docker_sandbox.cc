#include "sandbox/docker/docker_sandbox.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "sandbox/docker/container_fate.h"
#include "sandbox/docker/port_door.h"
#include "sandbox/log.h"

namespace sandbox::docker {
namespace {

// Polls until the engine no longer knows the container, for at most a few seconds: callers
// rely on "removed" meaning gone, not "going".
void waitUntilRemoved(EngineClient& engine, const std::string& id) noexcept {
  constexpr auto kRemovalWait = std::chrono::seconds(5);
  constexpr auto kPollInterval = std::chrono::milliseconds(50);
  const auto deadline = std::chrono::steady_clock::now() + kRemovalWait;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      engine.request(Method::kGet, "/containers/" + id + "/json");
    } catch (const EngineError& e) {
      if (e.isNotFound()) return;
    } catch (const std::exception&) {
      return;  // the engine is unreachable: nothing to wait for (called from noexcept code)
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  logger().warn("container {} is still being removed after {} s", id.substr(0, 12),
                kRemovalWait.count());
}

using protocol::fieldOr;

// The host pid of the container's first process (0: not running, or the engine cannot say).
pid_t containerPid(EngineClient& engine, const std::string& id) {
  const auto state = engine.request(Method::kGet, "/containers/" + id + "/json")
                         .json()
                         .value("State", nlohmann::json::object());
  const auto pid = state.find("Pid");
  return pid != state.end() && pid->is_number_integer() ? pid->get<pid_t>() : 0;
}

}  // namespace

bool thawContainer(EngineClient& engine, const std::string& id) noexcept {
  if (engine.remote()) return false;
  try {
    auto cgroup = ContainerCgroup::ofContainer(containerPid(engine, id), id);
    if (!cgroup || !cgroup->frozen()) return false;
    logger().info("thawing container {} before removing it (it was frozen)", id.substr(0, 12));
    return cgroup->thaw();
  } catch (const std::exception&) {
    return false;  // gone, or the engine cannot say: nothing frozen to thaw
  }
}

void forceRemoveContainer(EngineClient& engine, const std::string& id) noexcept {
  try {
    // v=1: anonymous volumes (an image's VOLUME lines) go with the container; without it each
    // session of such an image would leave a volume on the engine for ever.
    engine.request(Method::kDelete, "/containers/" + id + "?force=1&v=1");
  } catch (const EngineError& e) {
    if (e.isConflict()) {
      waitUntilRemoved(engine, id);  // AutoRemove got there first: "removal already in progress"
    } else if (!e.isNotFound()) {
      logger().warn("removing container {} failed: {}", id.substr(0, 12), e.what());
    }
  } catch (const std::exception& e) {
    logger().warn("removing container {} failed: {}", id.substr(0, 12), e.what());
  }
}

std::string explainStop(EngineClient& engine, const ContainerRecord& record,
                        const std::string& fallback) {
  const auto fate =
      waitForContainerFate(engine, record.id, record.created_unix - 1, DockerSandbox::kFateWait);
  return fate ? describeFate(*fate, record.memory_mib) : fallback;
}

DockerSandbox::DockerSandbox(std::shared_ptr<EngineClient> engine, ContainerRecord record,
                             AgentLink link, nlohmann::json hello, CheckpointSupport checkpoints,
                             bool host_cgroups)
    : engine_(std::move(engine)),
      record_(std::move(record)),
      channel_(std::move(link.channel)),
      attached_(std::move(link.attached)),
      socket_dir_(std::move(link.socket_dir)),
      checkpoints_(std::move(checkpoints)),
      agent_([this](nlohmann::json request, std::chrono::milliseconds deadline,
                    const AgentCallOptions& options) {
        return callAgent(std::move(request), deadline, options);
      }),
      hello_(std::move(hello)),
      host_cgroups_(host_cgroups) {}

DockerSandbox::~DockerSandbox() {
  // Closing the channel (socket) or the attach connection (stdin, StdinOnce) makes the agent
  // exit, and the engine removes the container. The forced removal makes that immediate and
  // certain; the socket's directory goes after it. A frozen agent would see nothing, and the
  // engine cannot remove a frozen container: thawed first.
  thaw();
  {
    std::lock_guard lock(channel_mutex_);
    channel_->close("the session ended");
    channel_.reset();
  }
  attached_->close("the session ended");
  attached_.reset();
  forceRemoveContainer(*engine_, record_.id);
  socket_dir_.reset();
  logger().debug("sandbox {} removed", record_.name);
}

std::shared_ptr<AgentChannel> DockerSandbox::currentChannel() const {
  std::lock_guard lock(channel_mutex_);
  return channel_;
}

bool DockerSandbox::alive() const noexcept {
  // While a checkpoint moves the channel, the attach stream (the agent's stdin) is its life.
  if (relinking_.load()) return attached_->alive();
  return currentChannel()->alive();
}

std::string DockerSandbox::status() {
  try {
    const auto state = engine_->request(Method::kGet, "/containers/" + record_.id + "/json")
                           .json()
                           .value("State", nlohmann::json::object());
    return state.value("Status", std::string("unknown"));
  } catch (const EngineError& e) {
    if (e.isNotFound()) return "gone";
    throw;
  }
}

std::optional<std::string> DockerSandbox::stopReason() {
  if (alive()) return std::nullopt;
  return resolveStopReason();
}

std::string DockerSandbox::resolveStopReason() {
  std::lock_guard lock(stop_reason_mutex_);
  if (!stop_reason_) {
    stop_reason_ =
        explainStop(*engine_, record_, "the sandbox stopped: " + currentChannel()->closeReason());
  }
  return *stop_reason_;
}

nlohmann::json DockerSandbox::callAgent(nlohmann::json request, std::chrono::milliseconds deadline,
                                        const AgentChannel::CallOptions& options) {
  std::shared_lock calls(calls_mutex_);
  thawOrThrow();  // before the deadline starts: time frozen never counts
  const auto channel = currentChannel();
  nlohmann::json reply;
  try {
    reply = channel->call(std::move(request), deadline, options);
  } catch (const ChannelClosedError&) {
    throw SandboxError(resolveStopReason());
  }
  if (!fieldOr<bool>(reply, "ok", false)) {
    throw SandboxError(fieldOr<std::string>(reply, "error", "the agent refused the request"));
  }
  return reply;
}

ExecResult DockerSandbox::exec(const ExecRequest& request, CancelToken& cancel,
                               const OutputCallback& on_output) {
  return agent_.exec(request, cancel, on_output);
}

std::size_t DockerSandbox::writeFile(const std::string& path, std::string_view bytes, int mode) {
  return agent_.writeFile(path, bytes, mode);
}

std::string DockerSandbox::readFile(const std::string& path, std::size_t max_bytes) {
  return agent_.readFile(path, max_bytes);
}

FileRange DockerSandbox::readFileRange(const std::string& path, std::uint64_t offset,
                                       std::size_t length) {
  return agent_.readFileRange(path, offset, length);
}

FileListing DockerSandbox::listFiles(const std::string& path) { return agent_.listFiles(path); }

common::UniqueFd DockerSandbox::openPort(std::uint16_t port) {
  if (!usesChannelSocket()) {
    throw SandboxError(
        "this sandbox's ports cannot be reached: previews need the agent's socket channel "
        "(sandbox.agent_channel \"socket\", with the engine on the server's host), and this "
        "sandbox talks over the engine's attach stream");
  }
  PortDoor door(socket_dir_->hostDir(), ChannelListener::kContainerDir);
  callAgent({{"op", protocol::kOpOpenPort},
             {"port", port},
             {"path", door.containerPath()},
             {"token", door.token()}},
            kOpenPortWait);
  // The agent connected and wrote the token before it answered: the connection waits.
  return door.accept(kOpenPortWait);
}

void DockerSandbox::checkpoint(const std::filesystem::path& dir) {
  if (!checkpoints_.runsc) {
    throw SandboxError(
        "this sandbox cannot be checkpointed: it needs gVisor (runsc) on an engine on the "
        "server's host");
  }
  std::unique_lock calls(calls_mutex_, std::defer_lock);
  if (!calls.try_lock_for(kCheckpointWait)) {
    throw SandboxError("the sandbox is busy (a call into it is still running); retry when it ends");
  }
  thawOrThrow();
  if (!alive()) throw SandboxError(resolveStopReason());
  if (usesChannelSocket()) {
    // gVisor cannot save a sandbox connected to a host socket: the agent leaves its channel.
    relinking_ = true;
    try {
      const auto reply =
          currentChannel()->call({{"op", protocol::kOpSuspend}}, AgentClient::kSuspendDeadline);
      if (!fieldOr<bool>(reply, "ok", false)) {
        relinking_ = false;
        throw SandboxError(fieldOr<std::string>(reply, "error", "the agent refused to suspend"));
      }
    } catch (const ChannelClosedError&) {
      relinking_ = false;
      throw SandboxError(resolveStopReason());
    }
    currentChannel()->close("suspended for a checkpoint");
  }
  std::exception_ptr failure;
  try {
    checkpointContainer(*checkpoints_.runsc, record_.id, dir);
  } catch (...) {
    failure = std::current_exception();
  }
  if (usesChannelSocket() && !relink()) throw SandboxError(resolveStopReason());
  if (failure) std::rethrow_exception(failure);
}

bool DockerSandbox::relink() {
  try {
    socket_dir_->rearm();
    auto opened =
        openSocketChannel(*attached_, *socket_dir_, checkpoints_.link_timeout, record_.name);
    if (!opened.channel) throw SandboxError("the agent could not reconnect: " + opened.refusal);
    std::lock_guard lock(channel_mutex_);
    channel_ = std::move(opened.channel);
  } catch (const std::exception& e) {
    const std::string reason =
        std::string("the sandbox stopped: its channel could not be reopened after a checkpoint: ") +
        e.what();
    logger().warn("sandbox {}: {}", record_.name, reason);
    {
      std::lock_guard lock(stop_reason_mutex_);
      stop_reason_ = reason;  // not the old channel's "suspended for a checkpoint"
    }
    attached_->close(reason);
    relinking_ = false;
    return false;
  }
  relinking_ = false;
  return true;
}

SocketChannel openSocketChannel(AgentChannel& attached, ChannelListener& listener,
                                std::chrono::milliseconds timeout, const std::string& name) {
  nlohmann::json reply;
  try {
    reply = attached.call({{"op", protocol::kOpChannel},
                           {"path", ChannelListener::containerSocketPath()},
                           {"token", listener.token()}},
                          timeout);
  } catch (const ChannelClosedError& e) {
    throw SandboxError(std::string("the sandbox agent stopped while opening its channel: ") +
                       e.what());
  }
  if (!fieldOr<bool>(reply, "ok", false)) {
    return {nullptr, fieldOr<std::string>(reply, "error", "refused")};
  }
  // The agent connected before it answered: the connection waits in the backlog.
  auto stream = std::make_unique<SocketStream>(listener.accept(timeout), kAgentSendTimeout);
  return {AgentChannel::start(std::move(stream), name), {}};
}

ContainerCgroup* DockerSandbox::cgroupLocked() {
  if (!cgroup_tried_) {
    cgroup_tried_ = true;
    try {
      cgroup_ = ContainerCgroup::ofContainer(containerPid(*engine_, record_.id), record_.id);
    } catch (const std::exception& e) {
      logger().debug("sandbox {}: no cgroup: {}", record_.name, e.what());
    }
    if (!cgroup_) {
      logger().info("sandbox {}: its cgroup is out of reach here; it is never frozen",
                    record_.name);
    }
  }
  return cgroup_ ? &*cgroup_ : nullptr;
}

bool DockerSandbox::freeze() {
  if (!host_cgroups_) return false;
  // Only what the engine says runs: a container it is stopping (an engine shutdown) would never
  // take the stop while frozen, and the engine would wait on it. Asked before the call lock is
  // taken: a slow engine must not hold up a call.
  try {
    if (status() != "running") return false;
  } catch (const std::exception&) {
    return false;  // the engine does not answer: leave the sandbox as it is
  }
  std::unique_lock calls(calls_mutex_, std::try_to_lock);  // no call runs while it is frozen
  if (!calls.owns_lock() || relinking_.load() || !alive()) return false;
  std::lock_guard lock(cgroup_mutex_);
  if (frozen_.load()) return true;
  auto* cgroup = cgroupLocked();
  if (cgroup == nullptr) return false;
  const auto started = std::chrono::steady_clock::now();
  if (!cgroup->freeze(kFreezeWait)) {
    logger().warn("sandbox {}: freezing did not finish within {} ms; it runs on", record_.name,
                  kFreezeWait.count());
    return false;
  }
  frozen_ = true;
  logger().debug(
      "sandbox {} frozen in {:.1f} ms", record_.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
          .count());
  return true;
}

bool DockerSandbox::thaw() noexcept {
  if (!frozen_.load()) return true;
  std::lock_guard lock(cgroup_mutex_);
  if (!frozen_.load()) return true;
  if (cgroup_ && !cgroup_->thaw()) {
    bool still_frozen = true;
    try {
      still_frozen = cgroup_->frozen();  // unreadable: the cgroup (and container) is gone
    } catch (const std::exception&) {
      still_frozen = false;
    }
    if (still_frozen) {
      logger().error("sandbox {}: cannot thaw it ({}: {})", record_.name,
                     cgroup_->files().freeze.string(), std::strerror(errno));
      return false;
    }
  }
  frozen_ = false;
  logger().debug("sandbox {} thawed", record_.name);
  return true;
}

void DockerSandbox::thawOrThrow() {
  if (!thaw()) {
    throw SandboxError(
        "the sandbox is frozen (idle) and the server could not thaw it: its cgroup's freezer file "
        "cannot be written. Retry; if it persists, end the session with cleanup_session (the "
        "operator's log names the file)");
  }
}

std::optional<Sandbox::Usage> DockerSandbox::usage() {
  if (!host_cgroups_) return std::nullopt;
  std::lock_guard lock(cgroup_mutex_);
  const auto* cgroup = cgroupLocked();
  if (cgroup == nullptr) return std::nullopt;
  const auto cpu = cgroup->cpuNs();
  if (!cpu) return std::nullopt;
  return Usage{*cpu, cgroup->memoryBytes().value_or(0)};
}

}  // namespace sandbox::docker
