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

template <class T>
T field(const nlohmann::json& object, const char* key, T fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

// Room for the agent's "[sandbox] ..." notes after the capped output.
constexpr std::size_t kNotesBytes = std::size_t{16} * 1024;
constexpr std::size_t kMaxNameBytes = 4096;  // a file name the server copies into a result
constexpr std::size_t kMaxPathBytes = 4096;  // a saved output's path, likewise

// `text` cut to `cap` bytes (the agent already cut it; this holds even if it did not).
std::string capped(std::string text, std::size_t cap, bool& was_cut) {
  if (text.size() > cap) {
    text.resize(cap);
    was_cut = true;
  }
  return text;
}

ExecResult parseExecReply(const nlohmann::json& reply, const ExecRequest& request) {
  const std::size_t max_output_bytes = request.max_output_bytes;
  ExecResult result;
  result.status = field<std::string>(reply, "status", "error");
  if (result.status != "success" && result.status != "error" && result.status != "timeout" &&
      result.status != "cancelled") {
    result.status = "error";
  }
  const std::size_t cap = max_output_bytes + kNotesBytes;
  bool cut = false;
  result.stdout_text = capped(field<std::string>(reply, "stdout", ""), cap, cut);
  result.stderr_text = capped(field<std::string>(reply, "stderr", ""), cap, cut);
  result.exit_code = field<int>(reply, "exit_code", 0);
  if (reply.contains("result") && reply["result"].is_string()) {
    result.result = capped(reply["result"].get<std::string>(), cap, cut);
  }
  if (cut) logger().info("an agent reply exceeded the output cap; it was cut");
  const auto truncated = field<nlohmann::json>(reply, "truncated", nlohmann::json::object());
  result.stdout_truncated = field<bool>(truncated, "stdout", false);
  result.stderr_truncated = field<bool>(truncated, "stderr", false);
  result.stdout_bytes = field<std::uint64_t>(reply, "stdout_bytes", result.stdout_text.size());
  result.stderr_bytes = field<std::uint64_t>(reply, "stderr_bytes", result.stderr_text.size());
  result.duration_ms = field<double>(reply, "duration_ms", 0.0);
  if (const auto exec_ms = field<double>(reply, "exec_ms", -1.0); exec_ms >= 0) {
    result.exec_ms = exec_ms;
  }
  result.state_lost = field<bool>(reply, "state_lost", false);
  const auto saved = field<nlohmann::json>(reply, "saved_output", nlohmann::json::object());
  for (const char* stream : {"stdout", "stderr"}) {
    const auto file = field<nlohmann::json>(saved, stream, nlohmann::json());
    const auto path = field<std::string>(file, "path", "");
    if (path.empty() || path.size() > kMaxPathBytes || path.front() != '/') continue;
    result.saved_outputs.push_back({stream, path, field<std::uint64_t>(file, "bytes", 0),
                                    field<bool>(file, "complete", false)});
  }
  result.rich = common::parseRichOutput(reply, request.images);
  for (const auto& why : result.rich.dropped) logger().info("agent reply: {}", why);
  return result;
}

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
                             std::shared_ptr<AgentChannel> channel, nlohmann::json hello)
    : engine_(std::move(engine)),
      record_(std::move(record)),
      channel_(std::move(channel)),
      hello_(std::move(hello)) {}

DockerSandbox::~DockerSandbox() {
  // Closing the attach connection closes the agent's stdin (StdinOnce): it exits and the engine
  // removes the container. The forced removal makes that immediate and certain.
  channel_->close("the session ended");
  channel_.reset();
  forceRemoveContainer(*engine_, record_.id);
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
  if (!field<bool>(reply, "ok", false)) {
    throw SandboxError(field<std::string>(reply, "error", "the agent refused the request"));
  }
  return reply;
}

ExecResult DockerSandbox::exec(const ExecRequest& request, CancelToken& cancel,
                               const OutputCallback& on_output) {
  nlohmann::json message = {
      {"op", "exec"},
      {"kind", request.kind == ExecKind::kPython       ? "python"
               : request.kind == ExecKind::kJavascript ? "javascript"
                                                       : "shell"},
      {"code", request.code},
      {"timeout_ms", request.timeout.count()},
      {"max_output_bytes", request.max_output_bytes},
      {"save_output_bytes", request.save_output_bytes},
      {"stream", request.stream},
      {"max_images", request.images.max_count},
      {"image_max_bytes", request.images.max_bytes},
      {"image_max_px", request.images.max_px},
  };
  AgentChannel::CallOptions options;
  options.cancel = &cancel;
  if (request.stream && on_output) {
    options.on_event = [&on_output](const nlohmann::json& event) {
      if (field<std::string>(event, "event", "") != "output") return;
      on_output(field<std::string>(event, "stream", "stdout"),
                field<std::string>(event, "data", ""));
    };
  }
  // Both streams at their cap (the agent applies the cap to events too), plus some slack.
  options.max_event_bytes = 2 * request.max_output_bytes + 2 * kNotesBytes;
  const auto sent = std::chrono::steady_clock::now();
  auto reply = callAgent(std::move(message), request.timeout + kExecGrace, options);
  const auto answered = std::chrono::steady_clock::now();
  ExecResult result = parseExecReply(reply, request);
  result.channel_ms = std::chrono::duration<double, std::milli>(answered - sent).count();
  return result;
}

std::size_t DockerSandbox::writeFile(const std::string& path, std::string_view bytes, int mode) {
  AgentChannel::CallOptions options;
  options.request_data = bytes;  // raw, in a data frame: no base64, no JSON escaping
  nlohmann::json request = {{"op", "write_file"}, {"path", path}, {"mode", mode}};
  if (bytes.empty()) request["data_b64"] = "";  // an empty file needs no data frame
  const auto reply = callAgent(std::move(request), kFileOpDeadline, options);
  return field<std::size_t>(reply, "bytes", bytes.size());
}

std::string DockerSandbox::readFile(const std::string& path, std::size_t max_bytes) {
  AgentChannel::CallOptions options;
  std::string data;
  options.reply_data = &data;
  const auto reply = callAgent(
      {{"op", "read_file"}, {"path", path}, {"max_bytes", max_bytes}, {"data_frame", true}},
      kFileOpDeadline, options);
  if (!field<bool>(reply, "data_frame", false) || data.size() > max_bytes) {
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
  const auto reply = callAgent({{"op", "read_file"},
                                {"path", path},
                                {"offset", offset},
                                {"length", length},
                                {"data_frame", true}},
                               kFileOpDeadline, options);
  if (!field<bool>(reply, "data_frame", false)) {
    throw SandboxError("read_file: the agent's reply for " + path + " carried no data");
  }
  if (range.data.size() > length) range.data.resize(length);
  range.offset = offset;
  range.file_size = field<std::uint64_t>(reply, "file_size", offset + range.data.size());
  return range;
}

FileListing DockerSandbox::listFiles(const std::string& path) {
  const auto reply = callAgent({{"op", "list_files"}, {"path", path}}, kFileOpDeadline);
  FileListing listing;
  listing.truncated = field<bool>(reply, "truncated", false);
  for (const auto& item : field<nlohmann::json>(reply, "entries", nlohmann::json::array())) {
    if (listing.entries.size() == FileListing::kMaxListEntries) {
      listing.truncated = true;
      break;
    }
    FileEntry entry;
    entry.name = field<std::string>(item, "name", "").substr(0, kMaxNameBytes);
    entry.type = field<std::string>(item, "type", "other");
    if (entry.type != "file" && entry.type != "dir" && entry.type != "symlink")
      entry.type = "other";
    entry.size = field<std::uint64_t>(item, "size", 0);
    entry.mtime = field<std::int64_t>(item, "mtime", 0);
    listing.entries.push_back(std::move(entry));
  }
  return listing;
}

}  // namespace sandbox::docker
