// JSON text <-> nlohmann::json, fast for messages that carry long strings (file contents in
// base64, captured output). nlohmann's lexer and serializer handle strings a character at a time
// (about 50 MB/s here: a 10 MiB upload spent over 600 ms in parse and dump alone); these keep
// its semantics but move long strings in bulk. Pure, header-only; used by the server and the agent.
//
// parseJson: long string values without escapes are cut out of the text before nlohmann parses
// the (now small) rest, then moved into the tree. Anything unusual (escapes, control characters,
// invalid UTF-8, keys) is left to nlohmann, so errors and results are exactly its own.
// dumpJson: compact output identical to dump(-1, ' ', false, error_handler_t::replace).
// parseJson refuses text nested deeper than kMaxJsonDepth (json_limits.h) before parsing: every
// transport, the agent and the agent channel parse through it, and trees of bounded depth keep
// the recursive steps (restoreLongStrings, dumpJson, copies) off the end of the stack.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_limits.h"
#include "common/utf8.h"

namespace common {

namespace json_codec_detail {

// Strings shorter than this are not worth cutting out.
constexpr std::size_t kLongString = 1024;
// A placeholder is this (parsed from "\u0001sandbox-json:") plus the index of the cut string.
// U+0001 can only enter a JSON string as the escape \u0001: inputs that contain that escape are
// parsed the plain way, so no string of the input can be mistaken for a placeholder.
constexpr std::string_view kMarker = "\x01sandbox-json:";
constexpr std::string_view kMarkerText = "\\u0001sandbox-json:";
constexpr std::string_view kU0001 = "\\u0001";

inline bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// nlohmann::json::parse, but a number too large for a double ("1e400") is a parse_error like any
// other bad input: nlohmann throws out_of_range (406) for it, which callers that answer parse
// errors did not catch (one such line ended the stdio server).
inline nlohmann::json parseOrThrowParseError(std::string_view text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    throw nlohmann::json::parse_error::create(101, 0, e.what(), nullptr);
  }
}

inline void restoreLongStrings(nlohmann::json& node, std::vector<std::string>& cut) {
  if (node.is_string()) {
    auto& text = node.get_ref<std::string&>();
    if (text.size() > kMarker.size() && text.compare(0, kMarker.size(), kMarker) == 0) {
      const std::size_t index = std::stoul(text.substr(kMarker.size()));
      text = std::move(cut.at(index));
    }
  } else if (node.is_structured()) {
    for (auto& child : node) restoreLongStrings(child, cut);
  }
}

inline void appendEscaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (text.size() > kLongString) out.reserve(out.size() + text.size() + 2);  // no regrowth
  out.push_back('"');
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4U]);
        out.push_back(kHex[c & 0x0FU]);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

inline void dumpInto(std::string& out, const nlohmann::json& node) {
  switch (node.type()) {
    case nlohmann::json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, value] : node.items()) {
        if (!first) out.push_back(',');
        first = false;
        if (isValidUtf8(key)) {
          appendEscaped(out, key);
        } else {
          out += nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        out.push_back(':');
        dumpInto(out, value);
      }
      out.push_back('}');
      return;
    }
    case nlohmann::json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& value : node) {
        if (!first) out.push_back(',');
        first = false;
        dumpInto(out, value);
      }
      out.push_back(']');
      return;
    }
    case nlohmann::json::value_t::string: {
      const auto& text = node.get_ref<const std::string&>();
      if (isValidUtf8(text)) {
        appendEscaped(out, text);
      } else {  // nlohmann replaces the bad bytes with U+FFFD
        out += node.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      return;
    }
    default:
      out += node.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace json_codec_detail

// Like nlohmann::json::parse(text): throws nlohmann::json::parse_error on invalid input, and on
// text nested deeper than max_depth (checked first, in one iterative pass).
[[nodiscard]] inline nlohmann::json parseJson(std::string_view text,
                                              std::size_t max_depth = kMaxJsonDepth) {
  namespace d = json_codec_detail;
  requireJsonDepth(text, max_depth);
  if (text.size() < d::kLongString || text.find(d::kU0001) != std::string_view::npos) {
    return d::parseOrThrowParseError(text);
  }
  std::string reduced;
  std::vector<std::string> cut;
  std::size_t copied = 0;  // text[0, copied) is in `reduced` already
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = text.find('"', pos);
    if (open == std::string_view::npos) break;
    // The literal ends at the next quote that is not escaped.
    std::size_t close = open + 1;
    bool escaped = false;
    while (close < text.size() && text[close] != '"') {
      if (text[close] == '\\') {
        escaped = true;
        ++close;  // skip the escaped character (it may be a quote)
      }
      ++close;
    }
    if (close >= text.size()) break;  // unterminated: nlohmann reports it
    pos = close + 1;
    const std::string_view body = text.substr(open + 1, close - open - 1);
    if (escaped || body.size() < d::kLongString) continue;
    std::size_t next = pos;
    while (next < text.size() && d::isJsonSpace(text[next])) ++next;
    if (next < text.size() && text[next] == ':') continue;  // an object key: leave it
    bool plain = true;
    for (const char c : body) {
      if (static_cast<unsigned char>(c) < 0x20) {
        plain = false;
        break;
      }
    }
    if (!plain || !isValidUtf8(body)) continue;  // nlohmann reports or decides
    if (reduced.empty()) reduced.reserve(text.size() / 8 + 64);
    reduced.append(text.data() + copied, open - copied);
    reduced.push_back('"');
    reduced.append(d::kMarkerText);
    reduced.append(std::to_string(cut.size()));
    reduced.push_back('"');
    cut.emplace_back(body);
    copied = close + 1;
  }
  if (cut.empty()) return d::parseOrThrowParseError(text);
  reduced.append(text.data() + copied, text.size() - copied);
  nlohmann::json parsed = d::parseOrThrowParseError(reduced);
  d::restoreLongStrings(parsed, cut);
  return parsed;
}

// Compact JSON, identical to json.dump(-1, ' ', false, error_handler_t::replace).
[[nodiscard]] inline std::string dumpJson(const nlohmann::json& node) {
  std::string out;
  json_codec_detail::dumpInto(out, node);
  return out;
}

}  // namespace common
