#include "agent/file_requests.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agent/file_ops.h"
#include "agent/request_error.h"
#include "common/base64.h"

namespace agent {
namespace {

std::string stringField(const nlohmann::json& request, const char* op, const char* field) {
  const auto it = request.find(field);
  if (it == request.end() || !it->is_string()) {
    throw RequestError(std::string(op) + ": \"" + field + "\" must be a string");
  }
  return it->get<std::string>();
}

mode_t modeField(const nlohmann::json& request) {
  const auto it = request.find("mode");
  if (it == request.end() || it->is_null()) return 0644;
  if (it->is_number_integer() || it->is_number_unsigned()) {
    return files::parseMode(it->get<std::int64_t>());
  }
  if (it->is_string()) return files::parseMode(it->get<std::string>());
  throw RequestError("write_file: \"mode\" must be an integer (420 for 0644) or an octal string");
}

// A non-negative integer field of read_file; nullopt when absent or null.
std::optional<std::uint64_t> optionalCount(const nlohmann::json& request, const char* field) {
  const auto it = request.find(field);
  if (it == request.end() || it->is_null()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  }
  throw RequestError(std::string("read_file: \"") + field + "\" must be a non-negative integer");
}

}  // namespace

nlohmann::json writeFileRequest(const nlohmann::json& request, const std::filesystem::path& cwd,
                                const std::string* data) {
  const auto path = files::resolvePath(stringField(request, "write_file", "path"), cwd);
  const mode_t mode = modeField(request);
  std::optional<std::string> decoded;
  if (data == nullptr) {
    decoded = common::base64Decode(stringField(request, "write_file", "data_b64"));
    if (!decoded) throw RequestError("write_file: \"data_b64\" is not valid base64");
    data = &*decoded;
  }
  const auto bytes = files::writeFile(path, *data, mode);
  return {{"bytes", bytes}, {"path", path.string()}};
}

nlohmann::json readFileRequest(const nlohmann::json& request, const std::filesystem::path& cwd,
                               std::string& data) {
  const auto path = files::resolvePath(stringField(request, "read_file", "path"), cwd);
  const auto as_frame = request.find("data_frame");
  const bool data_frame =
      as_frame != request.end() && as_frame->is_boolean() && as_frame->get<bool>();
  // The content as the reply's data frame, or inline as base64.
  const auto content = [&](std::string bytes) -> nlohmann::json {
    if (!data_frame) return {{"data_b64", common::base64Encode(bytes)}};
    data = std::move(bytes);
    return {{"data_frame", true}};
  };
  const auto offset = optionalCount(request, "offset");
  const auto length = optionalCount(request, "length");
  if (offset || length) {  // a range of a file of any size
    auto range =
        files::readFileRange(path, offset.value_or(0), length.value_or(files::kMaxTransferBytes));
    nlohmann::json reply = {{"size", range.data.size()},
                            {"path", path.string()},
                            {"offset", offset.value_or(0)},
                            {"file_size", range.file_size}};
    reply.update(content(std::move(range.data)));
    return reply;
  }
  const std::uint64_t max_bytes =
      std::min(optionalCount(request, "max_bytes").value_or(files::kMaxTransferBytes),
               files::kMaxTransferBytes);
  std::string bytes = files::readFile(path, max_bytes);
  nlohmann::json reply = {{"size", bytes.size()}, {"path", path.string()}};
  reply.update(content(std::move(bytes)));
  return reply;
}

nlohmann::json listFilesRequest(const nlohmann::json& request, const std::filesystem::path& cwd) {
  const auto it = request.find("path");
  std::string_view raw;  // absent, null or empty: the working directory
  if (it != request.end() && !it->is_null()) {
    if (!it->is_string()) throw RequestError("list_files: \"path\" must be a string");
    raw = it->get_ref<const std::string&>();
  }
  const auto path = files::resolvePath(raw.empty() ? std::string_view(".") : raw, cwd);
  return protocol::encodeFileListing(files::listDirectory(path));
}

}  // namespace agent
