#include "transport/bearer_auth.h"

#include <cctype>
#include <cstddef>

#include "common/constant_time.h"

namespace transport {

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
  return common::constantTimeEquals(credential, expected_token);
}

}  // namespace transport
