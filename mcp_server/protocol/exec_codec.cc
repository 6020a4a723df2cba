// The exec op's request and reply (agent_protocol.h).
#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

#include "protocol/agent_protocol.h"

namespace protocol {
namespace {

constexpr std::array<std::pair<ExecKind, std::string_view>, 3> kKindNames = {{
    {ExecKind::kPython, "python"},
    {ExecKind::kShell, "shell"},
    {ExecKind::kJavascript, "javascript"},
}};
constexpr std::array<std::pair<ExecStatus, std::string_view>, 4> kStatusNames = {{
    {ExecStatus::kSuccess, "success"},
    {ExecStatus::kError, "error"},
    {ExecStatus::kTimeout, "timeout"},
    {ExecStatus::kCancelled, "cancelled"},
}};

template <class Enum, std::size_t N>
std::string_view nameOf(const std::array<std::pair<Enum, std::string_view>, N>& names,
                        Enum value) noexcept {
  for (const auto& [candidate, name] : names) {
    if (candidate == value) return name;
  }
  return "unknown";
}

template <class Enum, std::size_t N>
std::optional<Enum> valueOf(const std::array<std::pair<Enum, std::string_view>, N>& names,
                            std::string_view text) noexcept {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

// A count field of an exec request: absent or null gives `fallback`; otherwise an integer that is
// positive (or zero when `allow_zero`), else ProtocolError.
std::int64_t countField(const json& message, const char* field, std::int64_t fallback,
                        bool allow_zero) {
  const auto it = message.find(field);
  if (it == message.end() || it->is_null()) return fallback;
  if (it->is_number_unsigned()) {
    return static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), INT64_MAX));
  }
  if (!it->is_number_integer()) {
    throw ProtocolError(std::string("exec: \"") + field + "\" must be an integer");
  }
  const auto value = it->get<std::int64_t>();
  if (value < 0 || (value == 0 && !allow_zero)) {
    throw ProtocolError(std::string("exec: \"") + field + "\" must be " +
                        (allow_zero ? "zero or more" : "a positive number") + ", got " +
                        std::to_string(value));
  }
  return value;
}

template <class T>
T clampedCount(const json& message, const char* field, T fallback, T limit, bool allow_zero) {
  const auto value = countField(message, field, static_cast<std::int64_t>(fallback), allow_zero);
  return static_cast<T>(std::min<std::uint64_t>(static_cast<std::uint64_t>(value),
                                                static_cast<std::uint64_t>(limit)));
}

// Takes the string `object[key]` out of `object` (no copy), cut to `cap` bytes; "" when absent or
// not a string.
std::string takeString(json& object, const char* key, std::size_t cap, bool& was_cut) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  std::string text = std::move(it->get_ref<std::string&>());
  if (text.size() > cap) {
    text.resize(cap);
    was_cut = true;
  }
  return text;
}

}  // namespace

std::string_view toString(ExecKind kind) noexcept { return nameOf(kKindNames, kind); }
std::string_view toString(ExecStatus status) noexcept { return nameOf(kStatusNames, status); }
std::optional<ExecKind> parseExecKind(std::string_view text) noexcept {
  return valueOf(kKindNames, text);
}
std::optional<ExecStatus> parseExecStatus(std::string_view text) noexcept {
  return valueOf(kStatusNames, text);
}

const json& memberOr(const json& object, const char* key, json::value_t type) {
  static const json kEmptyObject = json::object();
  static const json kEmptyArray = json::array();
  static const json kNull;
  if (object.is_object()) {
    const auto it = object.find(key);
    if (it != object.end() && it->type() == type) return *it;
  }
  return type == json::value_t::object  ? kEmptyObject
         : type == json::value_t::array ? kEmptyArray
                                        : kNull;
}

json encodeExecRequest(const ExecRequest& request) {
  return {
      {"op", kOpExec},
      {"kind", toString(request.kind)},
      {"code", request.code},
      {"timeout_ms", request.timeout.count()},
      {"max_output_bytes", request.max_output_bytes},
      {"save_output_bytes", request.save_output_bytes},
      {"stream", request.stream},
      {"max_images", request.images.max_count},
      {"image_max_bytes", request.images.max_bytes},
      {"image_max_px", request.images.max_px},
  };
}

ExecRequest decodeExecRequest(const json& message) {
  ExecRequest out;
  const auto kind_field = message.find("kind");
  const auto kind = kind_field != message.end() && kind_field->is_string()
                        ? parseExecKind(kind_field->get_ref<const std::string&>())
                        : std::nullopt;
  if (!kind) {
    const std::string got = kind_field == message.end() ? "nothing" : kind_field->dump();
    throw ProtocolError("exec: \"kind\" must be \"python\", \"javascript\" or \"shell\", got " +
                        got.substr(0, 64));
  }
  out.kind = *kind;
  const auto code = message.find("code");
  if (code == message.end() || !code->is_string()) {
    throw ProtocolError("exec: \"code\" must be a string with the code to run");
  }
  out.code = code->get<std::string>();
  out.timeout = std::chrono::milliseconds(clampedCount<std::int64_t>(
      message, "timeout_ms", kDefaultTimeout.count(), kMaxTimeout.count(), false));
  out.max_output_bytes =
      clampedCount(message, "max_output_bytes", kDefaultMaxOutputBytes, kMaxOutputBytesLimit, true);
  out.save_output_bytes =
      clampedCount<std::uint64_t>(message, "save_output_bytes", 0, kMaxSaveOutputBytesLimit, true);
  const auto stream = message.find("stream");
  if (stream != message.end() && !stream->is_null()) {
    if (!stream->is_boolean()) throw ProtocolError("exec: \"stream\" must be true or false");
    out.stream = stream->get<bool>();
  }
  out.images.max_count =
      clampedCount(message, "max_images", out.images.max_count, common::kMaxImagesLimit, true);
  out.images.max_bytes = clampedCount(message, "image_max_bytes", out.images.max_bytes,
                                      common::kMaxImageBytesLimit, false);
  out.images.max_px =
      std::max(clampedCount(message, "image_max_px", out.images.max_px, common::kMaxImagePx, false),
               common::kMinImagePx);
  return out;
}

json encodeExecReply(std::int64_t id, const ExecResult& result) {
  json reply = {
      {"id", id},
      {"ok", true},
      {"status", toString(result.status)},
      {"stdout", result.stdout_text},
      {"stderr", result.stderr_text},
      {"exit_code", result.exit_code},
      {"result", result.result ? json(*result.result) : json(nullptr)},
      {"truncated", {{"stdout", result.stdout_truncated}, {"stderr", result.stderr_truncated}}},
      {"stdout_bytes", result.stdout_bytes},
      {"stderr_bytes", result.stderr_bytes},
      {"duration_ms", result.duration_ms},
      {"state_lost", result.state_lost}};
  if (result.exec_ms) reply["exec_ms"] = *result.exec_ms;
  common::writeRichOutput(reply, result.rich);
  if (!result.saved_outputs.empty()) {
    auto& saved = reply["saved_output"];
    for (const auto& file : result.saved_outputs) {
      saved[file.stream] = {
          {"path", file.path}, {"bytes", file.bytes}, {"complete", file.complete}};
    }
  }
  return reply;
}

ExecResult decodeExecReply(json reply, const ExecRequest& request) {
  ExecResult result;
  result.status =
      parseExecStatus(fieldOr<std::string>(reply, "status", "error")).value_or(ExecStatus::kError);
  // The agent already cut each stream at the cap; this holds even if it did not.
  const std::size_t cap = request.max_output_bytes + kNotesBytes;
  bool cut = false;
  result.stdout_text = takeString(reply, "stdout", cap, cut);
  result.stderr_text = takeString(reply, "stderr", cap, cut);
  if (reply.is_object() && reply.contains("result") && reply["result"].is_string()) {
    result.result = takeString(reply, "result", cap, cut);
  }
  result.exit_code = fieldOr<int>(reply, "exit_code", 0);
  const json& truncated = memberOr(reply, "truncated", json::value_t::object);
  result.stdout_truncated = fieldOr<bool>(truncated, "stdout", false) || cut;
  result.stderr_truncated = fieldOr<bool>(truncated, "stderr", false) || cut;
  result.stdout_bytes = fieldOr<std::uint64_t>(reply, "stdout_bytes", result.stdout_text.size());
  result.stderr_bytes = fieldOr<std::uint64_t>(reply, "stderr_bytes", result.stderr_text.size());
  result.duration_ms = fieldOr<double>(reply, "duration_ms", 0.0);
  if (const auto exec_ms = fieldOr<double>(reply, "exec_ms", -1.0); exec_ms >= 0) {
    result.exec_ms = exec_ms;
  }
  result.state_lost = fieldOr<bool>(reply, "state_lost", false);
  const json& saved = memberOr(reply, "saved_output", json::value_t::object);
  for (const char* stream : {"stdout", "stderr"}) {
    const json& file = memberOr(saved, stream, json::value_t::object);
    auto path = fieldOr<std::string>(file, "path", "");
    if (path.empty() || path.size() > kMaxPathBytes || path.front() != '/') continue;
    result.saved_outputs.push_back({stream, std::move(path),
                                    fieldOr<std::uint64_t>(file, "bytes", 0),
                                    fieldOr<bool>(file, "complete", false)});
  }
  result.rich = common::parseRichOutput(reply, request.images);
  return result;
}

std::string formatSeconds(std::chrono::milliseconds duration) {
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  char text[32];
  const int decimals = (duration.count() % 100 == 0) ? 1 : (duration.count() % 10 == 0) ? 2 : 3;
  std::snprintf(text, sizeof text, "%.*f s", decimals, seconds);
  return text;
}

}  // namespace protocol
