// The JSON side of the file ops (write_file, read_file, list_files): validate the request, call
// file_ops, build the reply fields. Each throws files::FileOpError or RequestError with a message
// for the caller. Thread-safe (no shared state).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace agent {

// Each returns the reply's fields besides "id" and "ok".
// `data`: the content from the request's data frame; null: the request carries "data_b64".
[[nodiscard]] nlohmann::json writeFileRequest(const nlohmann::json& request,
                                              const std::filesystem::path& cwd,
                                              const std::string* data = nullptr);
// With "data_frame": true in the request the content goes into `data` (to be sent as the reply's
// data frame, which the reply announces with "data_frame": true), else into "data_b64".
[[nodiscard]] nlohmann::json readFileRequest(const nlohmann::json& request,
                                             const std::filesystem::path& cwd, std::string& data);
[[nodiscard]] nlohmann::json listFilesRequest(const nlohmann::json& request,
                                              const std::filesystem::path& cwd);

}  // namespace agent
