// Bounds on JSON text from outside the process, checked on the text before any parser builds a
// tree. nlohmann's parser and destructor are iterative, but copying, dumping and comparing a
// parsed tree recurse once per nesting level: a million nested '[' (2 MB) overflows the stack.
// So every entry point checks the nesting depth of the text first (common::parseJson does it
// itself), and no tree deeper than kMaxJsonDepth is ever built from input.
// Pure, header-only, allocation-free; thread-safe.
#pragma once

#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace common {

// Levels of arrays/objects a message may nest. MCP messages need about 10 (a tool call's
// arguments sit at level 3); 64 leaves room for any real schema while keeping every recursive
// walk of a parsed tree a few kilobytes of stack.
constexpr std::size_t kMaxJsonDepth = 64;

namespace json_limits_detail {

// The closing quote of the string literal whose body starts at `from`: the next '"' not escaped
// by an odd run of backslashes. npos when the literal is unterminated.
inline std::size_t stringEnd(std::string_view text, std::size_t from) noexcept {
  while (from < text.size()) {
    const void* hit = std::memchr(text.data() + from, '"', text.size() - from);
    if (hit == nullptr) return std::string_view::npos;
    const auto quote = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
    std::size_t backslashes = 0;
    while (quote - backslashes > from && text[quote - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return quote;
    from = quote + 1;
  }
  return std::string_view::npos;
}

}  // namespace json_limits_detail

// Where the text first nests deeper than max_depth: the offset of the '[' or '{' that opens level
// max_depth + 1, outside string literals. npos when it nests no deeper. One pass, no recursion;
// it does not validate the JSON otherwise (the parser does), and for valid JSON it is exact.
[[nodiscard]] inline std::size_t findExcessNesting(std::string_view text,
                                                   std::size_t max_depth = kMaxJsonDepth) noexcept {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '"':
        i = json_limits_detail::stringEnd(text, i + 1);
        if (i == std::string_view::npos) return std::string_view::npos;  // the parser reports it
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

// Throws nlohmann::json::parse_error (id 101, as for any syntax error) when the text nests deeper
// than max_depth, so every place that already answers parse errors answers this one too.
inline void requireJsonDepth(std::string_view text, std::size_t max_depth = kMaxJsonDepth) {
  const std::size_t at = findExcessNesting(text, max_depth);
  if (at == std::string_view::npos) return;
  throw nlohmann::json::parse_error::create(
      101, at + 1,
      "JSON nested deeper than " + std::to_string(max_depth) +
          " levels (the limit for arrays and objects); send a flatter message",
      nullptr);
}

// nlohmann::json::parse(text, nullptr, false), which also answers a discarded value for text
// nested deeper than max_depth: for replies of other programs (the Docker engine, the sidecar's
// audit lines) that are read as "JSON or nothing".
[[nodiscard]] inline nlohmann::json parseBoundedOrDiscarded(std::string_view text,
                                                            std::size_t max_depth = kMaxJsonDepth) {
  if (findExcessNesting(text, max_depth) != std::string_view::npos) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace common
