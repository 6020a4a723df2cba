#include "sandbox/base64.h"

#include <array>
#include <cstdint>
#include <stdexcept>

namespace sandbox {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> makeReverse() {
  std::array<std::int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  }
  return table;
}

constexpr auto kReverse = makeReverse();

}  // namespace

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16U) |
                            (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8U) |
                            std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.push_back(kAlphabet[(n >> 6U) & 63U]);
    out.push_back(kAlphabet[n & 63U]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t n = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16U;
    if (rest == 2) n |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8U;
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6U) & 63U] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    throw std::invalid_argument("base64 text length " + std::to_string(text.size()) +
                                " is not a multiple of 4");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=' ? (text[i + 2] == '=' ? 2 : 1) : 0) : 0;
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      if (k >= 4 - static_cast<std::size_t>(pad)) {
        n <<= 6U;
        continue;
      }
      const auto value = kReverse[static_cast<unsigned char>(text[i + k])];
      if (value < 0) throw std::invalid_argument("invalid base64 character");
      n = (n << 6U) | static_cast<std::uint32_t>(value);
    }
    out.push_back(static_cast<char>((n >> 16U) & 0xFFU));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8U) & 0xFFU));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFFU));
  }
  return out;
}

}  // namespace sandbox
