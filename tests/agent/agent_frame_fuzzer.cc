// libFuzzer target for everything the agent channel parses from a peer: the frame decoder
// (common/frame.h) fed in arbitrary chunks, parseJson of each payload, the agent's request
// parsing (exec requests), the server's decoding of agent replies (protocol/agent_protocol.h:
// exec replies, file listings), and the escaping applied before sandbox text reaches a log.
// Invariants: nothing crashes or throws anything but the documented errors, decoding never
// yields more bytes than were fed, a re-encoded payload decodes to itself, and escaped text
// holds no control character and stays bounded, a decoded reply stays within its caps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/exec_request.h"
#include "agent/request_error.h"
#include "common/frame.h"
#include "common/json_codec.h"
#include "sandbox/sandbox_text.h"

namespace {

constexpr std::size_t kMaxPayload = 1 << 16;  // small, so the "announced too much" path is hit
constexpr std::size_t kLogCap = 256;

void require(bool condition) {
  if (!condition) std::abort();
}

void checkEscaping(std::string_view payload) {
  const std::string escaped = sandbox::escapeForLog(payload, kLogCap);
  require(escaped.size() <= kLogCap * 4 + 8);
  for (const char c : escaped) {
    const auto byte = static_cast<unsigned char>(c);
    require(byte >= 0x20 && byte != 0x7F);
  }
}

void checkRoundTrip(const std::string& payload) {
  frame::Decoder again(kMaxPayload);
  again.feed(frame::encode(payload));
  const auto decoded = again.next();
  require(decoded.has_value() && *decoded == payload);
}

void parseAsAgentRequest(const std::string& payload) {
  nlohmann::json message;
  try {
    message = common::parseJson(payload);
  } catch (const nlohmann::json::exception&) {
    return;  // the agent logs and skips such frames
  }
  if (!message.is_object()) return;
  const auto id = message.find("id");
  const std::int64_t request_id =
      id != message.end() && id->is_number_integer() ? id->get<std::int64_t>() : 1;
  try {
    const agent::ExecRequest request = agent::parseExecRequest(request_id, message);
    require(request.max_output_bytes <= protocol::kMaxOutputBytesLimit);
    require(request.timeout <= protocol::kMaxTimeout);
  } catch (const agent::RequestError&) {
  }
}

// The same bytes as an agent's reply, decoded as the server does: never throws, always capped.
void decodeAsAgentReply(const std::string& payload) {
  nlohmann::json message;
  try {
    message = common::parseJson(payload);
  } catch (const nlohmann::json::exception&) {
    return;  // the channel closes on such frames
  }
  protocol::ExecRequest asked;
  asked.max_output_bytes = 16;
  const auto result = protocol::decodeExecReply(message, asked);
  const std::size_t cap = asked.max_output_bytes + protocol::kNotesBytes;
  require(result.stdout_text.size() <= cap && result.stderr_text.size() <= cap);
  require(!result.result || result.result->size() <= cap);
  require(result.saved_outputs.size() <= 2);
  for (const auto& saved : result.saved_outputs) {
    require(!saved.path.empty() && saved.path.front() == '/' &&
            saved.path.size() <= protocol::kMaxPathBytes);
  }
  const auto listing = protocol::decodeFileListing(message);
  require(listing.entries.size() <= protocol::FileListing::kMaxListEntries);
  for (const auto& entry : listing.entries) require(entry.name.size() <= protocol::kMaxNameBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size: the decoder must not care how bytes arrive.
  const std::size_t chunk = 1 + data[0] % 64;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  frame::Decoder decoder(kMaxPayload);
  std::size_t yielded = 0;
  try {
    for (std::size_t offset = 0; offset < input.size(); offset += chunk) {
      decoder.feed(input.substr(offset, chunk));
      while (auto payload = decoder.next()) {
        yielded += frame::kHeaderBytes + payload->size();
        require(yielded <= input.size());
        checkRoundTrip(*payload);
        checkEscaping(*payload);
        parseAsAgentRequest(*payload);
        decodeAsAgentReply(*payload);
      }
    }
  } catch (const frame::FrameError&) {
    return 0;  // an oversized announcement: the stream is closed, as documented
  }
  require(yielded + decoder.buffered() == input.size());
  return 0;
}
