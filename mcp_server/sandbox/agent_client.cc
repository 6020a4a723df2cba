#include "sandbox/agent_client.h"

#include "sandbox/log.h"

namespace sandbox {

using protocol::fieldOr;

ExecResult AgentClient::exec(const ExecRequest& request, CancelToken& cancel,
                             const OutputCallback& on_output) const {
  AgentCallOptions options;
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
  auto reply = call_(protocol::encodeExecRequest(request), request.timeout + kExecGrace, options);
  const auto answered = std::chrono::steady_clock::now();
  ExecResult result = protocol::decodeExecReply(std::move(reply), request);
  for (const auto& why : result.rich.dropped) logger().info("agent reply: {}", why);
  result.channel_ms = std::chrono::duration<double, std::milli>(answered - sent).count();
  return result;
}

std::size_t AgentClient::writeFile(const std::string& path, std::string_view bytes,
                                   int mode) const {
  AgentCallOptions options;
  options.request_data = bytes;  // raw, in a data frame: no base64, no JSON escaping
  nlohmann::json request = {{"op", protocol::kOpWriteFile}, {"path", path}, {"mode", mode}};
  if (bytes.empty()) request["data_b64"] = "";  // an empty file needs no data frame
  const auto reply = call_(std::move(request), kFileOpDeadline, options);
  return fieldOr<std::size_t>(reply, "bytes", bytes.size());
}

std::string AgentClient::readFile(const std::string& path, std::size_t max_bytes) const {
  AgentCallOptions options;
  std::string data;
  options.reply_data = &data;
  const auto reply = call_({{"op", protocol::kOpReadFile},
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

FileRange AgentClient::readFileRange(const std::string& path, std::uint64_t offset,
                                     std::size_t length) const {
  AgentCallOptions options;
  FileRange range;
  options.reply_data = &range.data;
  const auto reply = call_({{"op", protocol::kOpReadFile},
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

FileListing AgentClient::listFiles(const std::string& path) const {
  return protocol::decodeFileListing(
      call_({{"op", protocol::kOpListFiles}, {"path", path}}, kFileOpDeadline, {}));
}

void AgentClient::suspend() const {
  (void)call_({{"op", protocol::kOpSuspend}}, kSuspendDeadline, {});
}

}  // namespace sandbox
