// Comparing secrets (tokens, capability labels, cookies) without telling, through timing, where
// the first difference is. Header-only; shared by the server and the agent.
#pragma once

#include <cstddef>
#include <string_view>

namespace common {

// Takes time that depends only on the lengths, never on where the first difference is.
[[nodiscard]] inline bool constantTimeEquals(std::string_view a, std::string_view b) noexcept {
  // Walk the expected length in full whatever the input, folding every difference (and a length
  // mismatch) into one accumulator; only the final value is branched on.
  const std::size_t n = b.size();
  unsigned diff = a.size() == n ? 0U : 1U;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned>(x ^ static_cast<unsigned char>(b[i]));
  }
  // Keep the compiler from turning the loop into an early-exit memcmp.
  volatile unsigned result = diff;
  return result == 0;
}

}  // namespace common
