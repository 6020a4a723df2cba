#include "transport/sse_writer.h"

namespace transport {

std::string formatSseEvent(std::string_view id, std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(data.size() + id.size() + event.size() + 32);
  // Field values must not contain line breaks; ids and event names come from us, not clients.
  if (!id.empty()) out.append("id: ").append(id).push_back('\n');
  if (!event.empty()) out.append("event: ").append(event).push_back('\n');
  for (;;) {
    const std::size_t newline = data.find_first_of("\r\n");
    out.append("data: ").append(data.substr(0, newline)).push_back('\n');
    if (newline == std::string_view::npos) break;
    const bool crlf =
        data[newline] == '\r' && newline + 1 < data.size() && data[newline + 1] == '\n';
    data.remove_prefix(newline + (crlf ? 2 : 1));
  }
  out.push_back('\n');
  return out;
}

}  // namespace transport
