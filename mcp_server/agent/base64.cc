#include "agent/base64.h"

#include <array>
#include <cstdint>

namespace agent::base64 {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::uint8_t kInvalid = 0xFF;

constexpr std::array<std::uint8_t, 256> makeDecodeTable() {
  std::array<std::uint8_t, 256> table{};
  for (auto& v : table) v = kInvalid;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
  }
  return table;
}
constexpr auto kDecodeTable = makeDecodeTable();

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

}  // namespace

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (byte(i) << 16U) | (byte(i + 1) << 8U) | byte(i + 2);
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.push_back(kAlphabet[(n >> 6U) & 63U]);
    out.push_back(kAlphabet[n & 63U]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t n = byte(i) << 16U;
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.append("==");
  } else if (rest == 2) {
    const std::uint32_t n = (byte(i) << 16U) | (byte(i + 1) << 8U);
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.push_back(kAlphabet[(n >> 6U) & 63U]);
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> decode(std::string_view text, std::string* error) {
  // Strip padding (at most two '=' and only at the end).
  std::size_t len = text.size();
  std::size_t padding = 0;
  while (len > 0 && text[len - 1] == '=' && padding < 2) {
    --len;
    ++padding;
  }
  if (padding > 0 && text.size() % 4 != 0) {
    fail(error, "base64 padding is misplaced: padded input must be a multiple of 4 characters");
    return std::nullopt;
  }
  if (len % 4 == 1) {
    fail(error, "base64 input has an impossible length of " + std::to_string(text.size()) +
                    " characters; it was probably cut off");
    return std::nullopt;
  }
  std::string out;
  out.reserve(len / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const std::uint8_t v = kDecodeTable[static_cast<unsigned char>(text[i])];
    if (v == kInvalid) {
      fail(error, "invalid base64 character at offset " + std::to_string(i) +
                      "; expected the standard alphabet A-Z a-z 0-9 + / with = padding");
      return std::nullopt;
    }
    acc = (acc << 6U) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> static_cast<unsigned>(bits)) & 0xFFU));
    }
  }
  return out;
}

}  // namespace agent::base64
