#include "agent/exec_request.h"

#include <algorithm>
#include <cstdio>

namespace agent {
namespace {

std::int64_t positiveInteger(const nlohmann::json& request, const char* field,
                             std::int64_t fallback, bool allow_zero) {
  const auto it = request.find(field);
  if (it == request.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() && !it->is_number_unsigned()) {
    throw RequestError(std::string("exec: \"") + field + "\" must be an integer");
  }
  const auto value = it->get<std::int64_t>();
  if (value < 0 || (value == 0 && !allow_zero)) {
    throw RequestError(std::string("exec: \"") + field + "\" must be " +
                       (allow_zero ? "zero or more" : "a positive number") + ", got " +
                       std::to_string(value));
  }
  return value;
}

}  // namespace

ExecRequest parseExecRequest(std::int64_t id, const nlohmann::json& request) {
  ExecRequest out;
  out.id = id;
  const auto kind_field = request.find("kind");
  if (kind_field != request.end() && !kind_field->is_string()) {
    throw RequestError("exec: \"kind\" must be the string \"python\", \"javascript\" or \"shell\"");
  }
  const std::string kind =
      kind_field != request.end() ? kind_field->get<std::string>() : std::string();
  if (kind == "python") {
    out.kind = ExecKind::kPython;
  } else if (kind == "shell") {
    out.kind = ExecKind::kShell;
  } else if (kind == "javascript") {
    out.kind = ExecKind::kJavascript;
  } else {
    throw RequestError("exec: \"kind\" must be \"python\", \"javascript\" or \"shell\", got \"" +
                       kind + "\"");
  }
  const auto code = request.find("code");
  if (code == request.end() || !code->is_string()) {
    throw RequestError("exec: \"code\" must be a string with the code to run");
  }
  out.code = code->get<std::string>();
  const auto timeout_ms = positiveInteger(request, "timeout_ms", kDefaultTimeout.count(), false);
  out.timeout = std::chrono::milliseconds(std::min<std::int64_t>(timeout_ms, kMaxTimeout.count()));
  const auto max_output = positiveInteger(request, "max_output_bytes",
                                          static_cast<std::int64_t>(kDefaultMaxOutputBytes), true);
  out.max_output_bytes = static_cast<std::size_t>(
      std::min<std::int64_t>(max_output, static_cast<std::int64_t>(kMaxOutputBytesLimit)));
  const auto save_output = positiveInteger(request, "save_output_bytes", 0, true);
  out.save_output_bytes =
      std::min(static_cast<std::uint64_t>(save_output), kMaxSaveOutputBytesLimit);
  const auto stream = request.find("stream");
  if (stream != request.end() && !stream->is_null()) {
    if (!stream->is_boolean()) throw RequestError("exec: \"stream\" must be true or false");
    out.stream = stream->get<bool>();
  }
  out.images.max_count = static_cast<std::size_t>(std::min<std::int64_t>(
      positiveInteger(request, "max_images", static_cast<std::int64_t>(out.images.max_count), true),
      static_cast<std::int64_t>(common::kMaxImagesLimit)));
  out.images.max_bytes = static_cast<std::size_t>(std::min<std::int64_t>(
      positiveInteger(request, "image_max_bytes", static_cast<std::int64_t>(out.images.max_bytes),
                      false),
      static_cast<std::int64_t>(common::kMaxImageBytesLimit)));
  out.images.max_px =
      std::clamp<std::int64_t>(positiveInteger(request, "image_max_px", out.images.max_px, false),
                               common::kMinImagePx, common::kMaxImagePx);
  return out;
}

nlohmann::json toReply(std::int64_t id, const ExecResult& result) {
  nlohmann::json reply = {
      {"id", id},
      {"ok", true},
      {"status", result.status},
      {"stdout", result.stdout_text},
      {"stderr", result.stderr_text},
      {"exit_code", result.exit_code},
      {"result", result.result ? nlohmann::json(*result.result) : nlohmann::json(nullptr)},
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

std::string formatSeconds(std::chrono::milliseconds duration) {
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  char text[32];
  const int decimals = (duration.count() % 100 == 0) ? 1 : (duration.count() % 10 == 0) ? 2 : 3;
  std::snprintf(text, sizeof text, "%.*f s", decimals, seconds);
  return text;
}

}  // namespace agent
