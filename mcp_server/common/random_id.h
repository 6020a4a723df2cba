// Unguessable identifiers from the kernel CSPRNG. Thread-safe.
#pragma once

#include <sys/random.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "common/hex.h"

namespace common {

// Returns `bytes` random bytes as lowercase hex (2 * bytes characters).
[[nodiscard]] inline std::string randomHex(std::size_t bytes) {
  std::array<unsigned char, 64> buffer{};
  if (bytes > buffer.size()) throw std::invalid_argument("randomHex: at most 64 bytes");
  std::size_t filled = 0;
  while (filled < bytes) {
    const ssize_t n = getrandom(buffer.data() + filled, bytes - filled, 0);
    if (n < 0) throw std::runtime_error("getrandom failed; the kernel CSPRNG is unavailable");
    filled += static_cast<std::size_t>(n);
  }
  return hexEncode(buffer.data(), bytes);
}

}  // namespace common
