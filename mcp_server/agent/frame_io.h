// Frame output on a file descriptor: JSON -> UTF-8 text (invalid bytes become U+FFFD) -> frame ->
// a complete write. Not thread-safe (the agent writes from its one thread).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace agent {

// Serialises `message` so that invalid UTF-8 inside strings cannot fail the dump.
[[nodiscard]] std::string dumpJson(const nlohmann::json& message);

// Writes all of `bytes`, waiting with poll() if the fd is non-blocking and full. Returns false on
// a write error (errno set), e.g. EPIPE when the reader has gone.
[[nodiscard]] bool writeAll(int fd, std::string_view bytes) noexcept;

}  // namespace agent
