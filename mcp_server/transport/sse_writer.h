// Server-Sent Events framing for Streamable HTTP responses. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace transport {

// One SSE event: "id: <id>\nevent: <event>\ndata: <line>\n...\n\n". Each line of `data` gets its
// own "data:" field (compact JSON has none, but this keeps any input well-formed). An empty
// `id` or `event` omits that field.
[[nodiscard]] std::string formatSseEvent(std::string_view id, std::string_view event,
                                         std::string_view data);

}  // namespace transport
