// Unguessable identifiers from the kernel CSPRNG. Thread-safe.
#pragma once

#include <sys/random.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

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
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out.push_back(kDigits[buffer[i] >> 4U]);
    out.push_back(kDigits[buffer[i] & 0x0FU]);
  }
  return out;
}

}  // namespace common
