// Lowercase hexadecimal of raw bytes (digests, random ids, MACs).
#pragma once

#include <cstddef>
#include <string>

namespace common {

[[nodiscard]] inline std::string hexEncode(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4U]);
    out.push_back(kDigits[bytes[i] & 0x0FU]);
  }
  return out;
}

}  // namespace common
