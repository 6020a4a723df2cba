// Text that comes out of a sandbox is the attacker's: before it reaches a log line it is cut to
// a bounded length and every control character (including newlines, ESC and DEL) is escaped, so
// it can neither forge log lines nor drive a terminal. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// At most `max_bytes` of `text`, with bytes below 0x20 and 0x7F written as \xNN; "...[cut]"
// is appended when the text was longer. `keep_newlines` leaves '\n' as it is (multi-line tails
// shown to a user inside a JSON string).
[[nodiscard]] inline std::string escapeForLog(std::string_view text, std::size_t max_bytes,
                                              bool keep_newlines = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const std::string_view kept = text.substr(0, max_bytes);
  out.reserve(kept.size() + 16);
  for (const char c : kept) {
    const auto byte = static_cast<unsigned char>(c);
    const bool control = (byte < 0x20 && !(keep_newlines && c == '\n')) || byte == 0x7F;
    if (control || c == '\\') {
      out += "\\x";
      out.push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 0xFU]);
    } else {
      out.push_back(c);
    }
  }
  if (text.size() > max_bytes) out += "...[cut]";
  return out;
}

}  // namespace sandbox
