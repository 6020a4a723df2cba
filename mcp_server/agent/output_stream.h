// Names the two output streams of a child process. Thread-safe (constants only).
#pragma once

#include <string_view>

namespace agent {

enum class OutputStream { kStdout, kStderr };

[[nodiscard]] constexpr std::string_view streamName(OutputStream stream) noexcept {
  return stream == OutputStream::kStdout ? "stdout" : "stderr";
}

}  // namespace agent
