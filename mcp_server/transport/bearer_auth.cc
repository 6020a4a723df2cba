#include "transport/bearer_auth.h"

#include <cctype>
#include <cstddef>

namespace transport {

bool constantTimeEquals(std::string_view a, std::string_view b) noexcept {
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

bool isBearerAuthorized(std::string_view authorization, std::string_view expected_token) noexcept {
  if (expected_token.empty()) return false;
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  }
  std::string_view credential = authorization.substr(kScheme.size());
  if (credential.front() != ' ') return false;
  while (!credential.empty() && credential.front() == ' ') credential.remove_prefix(1);
  while (!credential.empty() && (credential.back() == ' ' || credential.back() == '\t')) {
    credential.remove_suffix(1);
  }
  return constantTimeEquals(credential, expected_token);
}

}  // namespace transport
