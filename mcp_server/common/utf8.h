// UTF-8 validation (rejects overlongs, surrogates and code points above U+10FFFF) and cutting
// at character boundaries. Pure.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace common {

[[nodiscard]] inline bool isValidUtf8(std::string_view text) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra = 0;
    unsigned min = 0;
    unsigned cp = 0;
    if ((c & 0xE0U) == 0xC0U) {
      extra = 1, min = 0x80, cp = c & 0x1FU;
    } else if ((c & 0xF0U) == 0xE0U) {
      extra = 2, min = 0x800, cp = c & 0x0FU;
    } else if ((c & 0xF8U) == 0xF0U) {
      extra = 3, min = 0x10000, cp = c & 0x07U;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xC0U) != 0x80U) return false;
      cp = (cp << 6U) | (p[i] & 0x3FU);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += extra + 1;
  }
  return true;
}

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 multi-byte sequence
// (bytes that are invalid anyway count as complete: they become U+FFFD later).
[[nodiscard]] inline std::size_t completeUtf8PrefixLength(std::string_view bytes) noexcept {
  const auto sequenceLength = [](unsigned char lead) -> std::size_t {
    if (lead < 0x80U) return 1;
    if ((lead & 0xE0U) == 0xC0U) return 2;
    if ((lead & 0xF0U) == 0xE0U) return 3;
    if ((lead & 0xF8U) == 0xF0U) return 4;
    return 0;  // a continuation or invalid byte
  };
  // Only the last three bytes can belong to an unfinished sequence.
  const std::size_t n = bytes.size();
  const std::size_t lookback = std::min<std::size_t>(n, 3);
  for (std::size_t back = 1; back <= lookback; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0U) == 0x80U) continue;  // continuation byte: keep looking for the lead
    const std::size_t need = sequenceLength(c);
    return (need > back) ? n - back : n;
  }
  return n;
}

}  // namespace common
