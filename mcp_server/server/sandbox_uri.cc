#include "server/sandbox_uri.h"

#include <charconv>

namespace server {
namespace {

constexpr std::size_t kMaxUriBytes = 8192;

bool isUnreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string percentEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (isUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(c);
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    out.push_back('%');
    out.push_back(kHex[byte >> 4U]);
    out.push_back(kHex[byte & 0xFU]);
  }
  return out;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void fail(const std::string& what) {
  throw SandboxUriError(what +
                        "; expected sandbox://{session_id}/{path}, e.g. "
                        "sandbox://my-session/workspace/data.csv?offset=0&length=65536");
}

std::string percentDecode(std::string_view text, const char* part) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const int high = i + 2 < text.size() ? hexValue(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hexValue(text[i + 2]) : -1;
    if (high < 0 || low < 0) fail(std::string("bad percent-encoding in the ") + part);
    const char decoded = static_cast<char>((high << 4) | low);
    if (decoded == '\0') fail(std::string("a NUL byte in the ") + part);
    out.push_back(decoded);
    i += 2;
  }
  return out;
}

std::uint64_t parseCount(std::string_view value, const std::string& name) {
  std::uint64_t out = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc() || ptr != end) {
    fail("the query parameter " + name + " must be a non-negative integer");
  }
  return out;
}

void parseQuery(std::string_view query, SandboxUri& out) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string name(pair.substr(0, eq));
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    auto& slot = name == "offset" ? out.offset : name == "length" ? out.length : out.offset;
    if (name != "offset" && name != "length") {
      fail("unknown query parameter '" + name + "' (only offset and length)");
    }
    if (slot) fail("the query parameter " + name + " is given twice");
    slot = parseCount(value, name);
  }
  // A range of no bytes reads nothing and would link to itself as the next range.
  if (out.length == 0U) {
    fail(
        "the query parameter length must be at least 1 (leave it out to read as much as one "
        "read allows)");
  }
}

}  // namespace

std::string makeSandboxUri(std::string_view session_id, std::string_view absolute_path) {
  std::string_view path = absolute_path;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return std::string(kSandboxUriScheme) + percentEncode(session_id, false) + "/" +
         percentEncode(path, true);
}

SandboxUri parseSandboxUri(std::string_view uri) {
  if (uri.size() > kMaxUriBytes) fail("the URI is longer than 8192 bytes");
  if (uri.substr(0, kSandboxUriScheme.size()) != kSandboxUriScheme) {
    fail("the URI does not start with sandbox://");
  }
  std::string_view rest = uri.substr(kSandboxUriScheme.size());
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  SandboxUri out;
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    parseQuery(rest.substr(question + 1), out);
    rest = rest.substr(0, question);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) fail("the URI names no session");
  out.session_id = percentDecode(rest.substr(0, slash), "session id");
  const std::string_view path = rest.substr(slash + 1);
  if (path.empty()) fail("the URI names no file");
  out.path = "/" + percentDecode(path, "path");
  return out;
}

}  // namespace server
