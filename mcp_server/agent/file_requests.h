// The JSON side of the file ops (write_file, read_file, list_files): validate the request, call
// file_ops, build the reply fields. Each throws files::FileOpError or RequestError with a message
// for the caller. Thread-safe (no shared state).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

namespace agent {

// Each returns the reply's fields besides "id" and "ok".
[[nodiscard]] nlohmann::json writeFileRequest(const nlohmann::json& request,
                                              const std::filesystem::path& cwd);
[[nodiscard]] nlohmann::json readFileRequest(const nlohmann::json& request,
                                             const std::filesystem::path& cwd);
[[nodiscard]] nlohmann::json listFilesRequest(const nlohmann::json& request,
                                              const std::filesystem::path& cwd);

}  // namespace agent
