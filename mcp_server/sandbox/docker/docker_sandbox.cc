#include "sandbox/docker/docker_sandbox.h"

#include <chrono>
#include <thread>
#include <utility>

#include "sandbox/docker/container_fate.h"
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

}  // namespace

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
                             AgentLink link, nlohmann::json hello)
    : engine_(std::move(engine)),
      record_(std::move(record)),
      channel_(std::move(link.channel)),
      attached_(std::move(link.attached)),
      socket_dir_(std::move(link.socket_dir)),
      hello_(std::move(hello)) {}

DockerSandbox::~DockerSandbox() {
  // Closing the channel (socket) or the attach connection (stdin, StdinOnce) makes the agent
  // exit, and the engine removes the container. The forced removal makes that immediate and
  // certain; the socket's directory goes after it.
  channel_->close("the session ended");
  attached_->close("the session ended");
  channel_.reset();
  attached_.reset();
  forceRemoveContainer(*engine_, record_.id);
  socket_dir_.reset();
  logger().debug("sandbox {} removed", record_.name);
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
  if (channel_->alive()) return std::nullopt;
  return resolveStopReason();
}

std::string DockerSandbox::resolveStopReason() {
  std::lock_guard lock(stop_reason_mutex_);
  if (!stop_reason_) {
    stop_reason_ =
        explainStop(*engine_, record_, "the sandbox stopped: " + channel_->closeReason());
  }
  return *stop_reason_;
}

nlohmann::json DockerSandbox::callAgent(nlohmann::json request, std::chrono::milliseconds deadline,
                                        const AgentChannel::CallOptions& options) {
  nlohmann::json reply;
  try {
    reply = channel_->call(std::move(request), deadline, options);
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
  AgentChannel::CallOptions options;
  options.cancel = &cancel;
  if (request.stream && on_output) {
    options.on_event = [&on_output](const nlohmann::json& event) {
      if (fieldOr<std::string>(event, "event", "") != "output") return;
      on_output(fieldOr<std::string>(event, "stream", "stdout"),
                fieldOr<std::string>(event, "data", ""));
    };
  }
  // Both streams at their cap (the agent applies the cap to events too), plus some slack.
  options.max_event_bytes = 2 * request.max_output_bytes + 2 * protocol::kNotesBytes;
  const auto sent = std::chrono::steady_clock::now();
  auto reply =
      callAgent(protocol::encodeExecRequest(request), request.timeout + kExecGrace, options);
  const auto answered = std::chrono::steady_clock::now();
  ExecResult result = protocol::decodeExecReply(std::move(reply), request);
  for (const auto& why : result.rich.dropped) logger().info("agent reply: {}", why);
  result.channel_ms = std::chrono::duration<double, std::milli>(answered - sent).count();
  return result;
}

std::size_t DockerSandbox::writeFile(const std::string& path, std::string_view bytes, int mode) {
  AgentChannel::CallOptions options;
  options.request_data = bytes;  // raw, in a data frame: no base64, no JSON escaping
  nlohmann::json request = {{"op", protocol::kOpWriteFile}, {"path", path}, {"mode", mode}};
  if (bytes.empty()) request["data_b64"] = "";  // an empty file needs no data frame
  const auto reply = callAgent(std::move(request), kFileOpDeadline, options);
  return fieldOr<std::size_t>(reply, "bytes", bytes.size());
}

std::string DockerSandbox::readFile(const std::string& path, std::size_t max_bytes) {
  AgentChannel::CallOptions options;
  std::string data;
  options.reply_data = &data;
  const auto reply = callAgent({{"op", protocol::kOpReadFile},
                                {"path", path},
                                {"max_bytes", max_bytes},
                                {"data_frame", true}},
                               kFileOpDeadline, options);
  if (!fieldOr<bool>(reply, "data_frame", false) || data.size() > max_bytes) {
    throw SandboxError("read_file: the agent's reply for " + path +
                       " did not carry the file within the limit");
  }
  return data;
}

FileRange DockerSandbox::readFileRange(const std::string& path, std::uint64_t offset,
                                       std::size_t length) {
  AgentChannel::CallOptions options;
  FileRange range;
  options.reply_data = &range.data;
  const auto reply = callAgent({{"op", protocol::kOpReadFile},
                                {"path", path},
                                {"offset", offset},
                                {"length", length},
                                {"data_frame", true}},
                               kFileOpDeadline, options);
  if (!fieldOr<bool>(reply, "data_frame", false)) {
    throw SandboxError("read_file: the agent's reply for " + path + " carried no data");
  }
  if (range.data.size() > length) range.data.resize(length);
  range.offset = offset;
  range.file_size = fieldOr<std::uint64_t>(reply, "file_size", offset + range.data.size());
  return range;
}

FileListing DockerSandbox::listFiles(const std::string& path) {
  return protocol::decodeFileListing(
      callAgent({{"op", protocol::kOpListFiles}, {"path", path}}, kFileOpDeadline));
}

}  // namespace sandbox::docker
