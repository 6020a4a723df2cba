#include "metrics/text_format.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

namespace metrics {
namespace {

constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53

// Escapes backslash and newline, and double quote when `quote` is set.
std::string escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 32> buffer{};  // the shortest round-trip double needs at most 24
  std::to_chars_result result{};
  if (std::trunc(value) == value && std::fabs(value) < kLargestExactInteger) {
    result = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                           static_cast<std::int64_t>(value));
  } else {
    result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  }
  if (result.ec != std::errc()) return "NaN";  // unreachable: the buffer is large enough
  return {buffer.data(), result.ptr};
}

std::string escapeHelp(std::string_view help) { return escape(help, false); }

std::string escapeLabelValue(std::string_view value) { return escape(value, true); }

}  // namespace metrics
