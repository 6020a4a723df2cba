// The URIs of session files as MCP resources: sandbox://{session_id}/{path}, where path is the
// file's absolute path in the sandbox without its leading slash, each part percent-encoded, and
// an optional range query ?offset=N&length=N (length at least 1). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace server {

inline constexpr std::string_view kSandboxUriScheme = "sandbox://";
// What resources/templates/list offers (RFC 6570: reserved expansion for the path, a form-style
// query for the range).
inline constexpr std::string_view kSandboxUriTemplate =
    "sandbox://{session_id}/{+path}{?offset,length}";

class SandboxUriError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct SandboxUri {
  std::string session_id;
  std::string path;  // absolute, as in the sandbox
  std::optional<std::uint64_t> offset;
  std::optional<std::uint64_t> length;
};

// `absolute_path` must start with '/'.
[[nodiscard]] std::string makeSandboxUri(std::string_view session_id,
                                         std::string_view absolute_path);

// Throws SandboxUriError with a sentence saying what is wrong and the expected form.
[[nodiscard]] SandboxUri parseSandboxUri(std::string_view uri);

}  // namespace server
