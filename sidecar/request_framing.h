// Whether a request's body framing is one every HTTP/1.1 server reads the same way. Beast frames
// a request as chunked only when `chunked` is the last transfer coding and accepts a
// Content-Length list of equal values; an upstream that reads such a head differently (e.g.
// Gunicorn, CVE-2024-1135) would take the bytes of the next request on a kept-alive connection,
// one the proxy writes with the operator's secret headers, as the first one's body. Refusing the
// ambiguous heads leaves only framing the proxy's parser and the upstream agree on.
// Thread-safety: pure.
#pragma once

#include <boost/beast/http/message.hpp>
#include <optional>
#include <string>

namespace sidecar {

// Why the head's framing is refused, or nullopt when it is unambiguous: Transfer-Encoding, when
// present, is exactly one field `chunked` (any case, blanks around it ignored) on an HTTP/1.1
// request and without Content-Length; Content-Length is at most one field holding one value.
[[nodiscard]] std::optional<std::string> framingRefusal(
    const boost::beast::http::request_header<>& head);

}  // namespace sidecar
