// libFuzzer target for the URL parser. Invariants: parseUrl never crashes or trips a sanitizer;
// it returns a Url or an error, never both; every accepted URL is canonical (parsing its text
// again yields the same Url and the same decision). Built by run_fuzzer.sh with clang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "policy/policy.h"

namespace {

void check(bool condition, const char* what, std::string_view input) {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s\ninput: %.*s\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

const policy::Policy& fuzzPolicy() {
  static const auto loaded = policy::loadPolicy(nlohmann::json::parse(R"([
    "http://localhost:8265/mcp", "http://127.0.0.1:9000/api/", "http://[::1]:7000/",
    {"url": "https://mcp.example.com/v1", "methods": ["tools/call"], "tools": ["search"]}])"));
  return *loaded;
}

bool isPrintableAscii(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return false;
    }
  }
  return true;
}

bool hasDotSegment(std::string_view path) {
  return path.find("/./") != std::string_view::npos ||
         path.find("/../") != std::string_view::npos || path.ends_with("/.") ||
         path.ends_with("/..");
}

void checkIpAddress(std::string_view input) {
  const std::optional<policy::IpAddress> address = policy::parseIpAddress(input);
  if (!address) return;
  const std::optional<policy::IpAddress> again = policy::parseIpAddress(address->toString());
  check(again.has_value() && *again == *address, "IpAddress text does not round-trip", input);
  (void)policy::classifyAddress(*address);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  checkIpAddress(input);
  const policy::ParseResult parsed = policy::parseUrl(input);
  check(parsed.url.has_value() == parsed.error.empty(), "url and error both set or both empty",
        input);
  const policy::Decision decision = policy::decideUrl(fuzzPolicy(), input);
  check(!decision.reason.empty(), "decision without a reason", input);
  if (!parsed.url) {
    check(!decision.allowed(), "unparsable URL allowed", input);
    return 0;
  }
  const policy::Url& url = *parsed.url;
  const std::string text = url.toString();
  check(isPrintableAscii(text), "canonical text is not printable ASCII", input);
  check(url.scheme == "http" || url.scheme == "https", "unexpected scheme", input);
  check(url.port != 0, "port 0", input);
  check(!url.path.empty() && url.path.front() == '/', "path does not start with '/'", input);
  check(!hasDotSegment(url.path), "dot segment left in path", input);
  check(url.host.find('@') == std::string::npos && url.host.find('%') == std::string::npos,
        "host carries '@' or '%'", input);
  const policy::ParseResult again = policy::parseUrl(text);
  check(again.url.has_value(), "canonical text does not parse again", input);
  check(*again.url == url, "parse(toString(url)) != url", input);
  check(policy::decideUrl(fuzzPolicy(), text).verdict == decision.verdict,
        "canonical text decided differently", input);
  return 0;
}
