// ClientConnection as the worker's ResponseSink: the answer serialized on the worker thread and
// posted to the strand, with back-pressure so a slow client holds up the upstream transfer instead
// of filling memory.
#include <boost/beast/http/write.hpp>
#include <cstdio>
#include <sstream>
#include <utility>

#include "sidecar/client_connection.h"

namespace sidecar {
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Upper bound on response bytes waiting for the client: past it the worker (and so libcurl, and
// so the upstream's TCP window) waits.
constexpr std::size_t kMaxQueuedBytes = std::size_t{256} * 1024;

}  // namespace

void ClientConnection::sendComplete(unsigned status, HeaderList headers, std::string content_type,
                                    std::string body) {
  auto response = std::make_shared<http::response<http::string_body>>();
  response->result(status);
  response->version(11);
  for (auto& [name, value] : headers) response->insert(name, value);
  response->set(http::field::content_type, content_type);
  response->keep_alive(keep_alive_);
  response->body() = std::move(body);
  response->prepare_payload();
  WriteItem item;
  item.kind = WriteItem::Kind::kComplete;
  item.complete = std::move(response);
  item.last = true;
  post(std::move(item));
}

void ClientConnection::sendHead(unsigned status, HeaderList headers, bool has_body) {
  http::response_header<> header;
  header.result(status);
  header.version(11);
  for (auto& [name, value] : headers) header.insert(name, value);
  if (!keep_alive_) header.set(http::field::connection, "close");
  if (has_body) header.set(http::field::transfer_encoding, "chunked");
  std::ostringstream text;
  text << header;  // the status line and fields, ending with the empty line
  if (has_body) {
    // Held back until the first body bytes (or the end): they leave in the same write.
    pending_head_ = text.str();
    return;
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.data = text.str();
  item.last = true;
  post(std::move(item));
}

bool ClientConnection::sendChunk(std::string data) {
  if (data.empty()) return !clientGone();  // an empty chunk would end the chunked body
  {
    std::unique_lock lock(flow_mutex_);
    flow_changed_.wait(lock, [this] { return gone_.load() || queued_bytes_ < kMaxQueuedBytes; });
    if (gone_.load()) return false;
    queued_bytes_ += data.size();
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.flow_bytes = data.size();
  char size_line[24];
  const int length = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  item.data.reserve(pending_head_.size() + static_cast<std::size_t>(length) + data.size() + 2);
  item.data.append(std::exchange(pending_head_, {}));
  item.data.append(size_line, static_cast<std::size_t>(length));
  item.data.append(data);
  item.data.append("\r\n");
  post(std::move(item));
  return true;
}

void ClientConnection::endStream() {
  WriteItem item;
  item.kind = WriteItem::Kind::kBytes;
  item.data = std::exchange(pending_head_, {}) + "0\r\n\r\n";
  item.last = true;
  post(std::move(item));
}

void ClientConnection::abortStream() {
  if (!pending_head_.empty()) {  // the head the client was promised, then the cut
    WriteItem head;
    head.kind = WriteItem::Kind::kBytes;
    head.data = std::exchange(pending_head_, {});
    post(std::move(head));
  }
  WriteItem item;
  item.kind = WriteItem::Kind::kAbort;
  post(std::move(item));
}

bool ClientConnection::clientGone() const noexcept { return gone_.load(); }

}  // namespace sidecar
