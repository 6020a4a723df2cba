// Small text helpers shared by the server and the sidecar. Header-only, pure.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace common {

// ASCII case-insensitive equality (HTTP header names and tokens).
[[nodiscard]] inline bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace common
