// HTTP bits both egress paths need (the proxy's own refusals, and the TLS interception's): the
// refusal answer a client prints, and the tokens of a Connection header. Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sidecar {

// "HTTP/1.1 403 Forbidden: <reason>" with the reason also as a text/plain body,
// X-Sandbox-Egress: refused and Connection: close. The reason phrase is printable ASCII on one
// line, at most 300 characters (clients such as pip print it: it is where the model reads why).
[[nodiscard]] std::string refusalResponse(unsigned status, std::string_view reason);

// The Connection header's tokens, lowercase, blanks trimmed.
[[nodiscard]] std::vector<std::string> connectionTokens(std::string_view value);

}  // namespace sidecar
