// File operations requested by the server: write (atomic), read (bounded) and list. Each throws
// FileOpError whose message names the path, the system's reason and what to do next. Thread-safe
// (no shared state) but the agent calls them from its one thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/agent_protocol.h"

namespace agent::files {

class FileOpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Files above this cannot travel in one frame once base64-encoded (frame::kMaxPayloadBytes).
inline constexpr std::uint64_t kMaxTransferBytes = 48ULL * 1024 * 1024;

// `path` if absolute, else `cwd / path`; lexically normalised. Throws FileOpError when empty.
[[nodiscard]] std::filesystem::path resolvePath(std::string_view path,
                                                const std::filesystem::path& cwd);

// "<strerror>: <path> — <hint>" for an errno from an operation on `path`.
[[nodiscard]] std::string describeError(int error_number, const std::filesystem::path& path);

// Creates missing parent directories, writes to a temporary file in the target's directory and
// renames it over the target, so readers never see a half-written file. Returns bytes written.
std::uint64_t writeFile(const std::filesystem::path& path, std::string_view data, mode_t mode);

// Reads a regular file of at most `max_bytes` bytes.
[[nodiscard]] std::string readFile(const std::filesystem::path& path, std::uint64_t max_bytes);

struct FileRange {
  std::string data;             // at most the requested length (less at the end of the file)
  std::uint64_t file_size = 0;  // the whole file's size when it was opened
};

// Reads `length` bytes (at most kMaxTransferBytes) at `offset` of a regular file of any size.
// Throws FileOpError like readFile, and when `offset` is past the end of the file.
[[nodiscard]] FileRange readFileRange(const std::filesystem::path& path, std::uint64_t offset,
                                      std::uint64_t length);

// Entries sorted by name, at most FileListing::kMaxListEntries; symlinks are not followed.
[[nodiscard]] protocol::FileListing listDirectory(const std::filesystem::path& path);

// Parses a permission mode given as an integer (420 == 0644) or an octal string ("0644", "755").
[[nodiscard]] mode_t parseMode(std::int64_t value);
[[nodiscard]] mode_t parseMode(std::string_view octal);

}  // namespace agent::files
