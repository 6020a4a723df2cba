// One accepted connection on the sidecar's Unix socket: reads one request, hands it to a worker
// (request_handler), and writes the answer the worker streams into it. One request per
// connection (every answer carries Connection: close): a Unix-socket connect costs microseconds,
// and it lets a read that only watches for EOF detect a client that leaves mid-stream.
// Thread-safety: the Beast parts run on the connection's strand; the ResponseSink methods are
// called from one worker thread and reach the strand only through net::post.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/worker_pool.h"
#include "sidecar/request_handler.h"
#include "sidecar/response_sink.h"
#include "sidecar/sidecar_config.h"
#include "sidecar/sidecar_log.h"

namespace sidecar {

class ClientConnection;

// Shared by the server, its connections and the workers.
struct ServerState {
  ServerState(SidecarConfig sidecar_config, HandlerContext handler_context)
      : config(std::move(sidecar_config)),
        handler(std::move(handler_context)),
        workers(config.max_concurrent_requests, "request worker", &log()) {}

  const SidecarConfig config;
  const HandlerContext handler;
  common::WorkerPool workers;  // one thread per allowed concurrent request: jobs never wait in line
  std::atomic<std::size_t> active_requests{0};

  std::mutex connections_mutex;  // live connections, so that stop() can close them
  std::unordered_map<ClientConnection*, std::weak_ptr<ClientConnection>> connections;
};

class ClientConnection final : public ResponseSink,
                               public std::enable_shared_from_this<ClientConnection> {
 public:
  using Protocol = boost::asio::local::stream_protocol;

  ClientConnection(Protocol::socket socket, std::shared_ptr<ServerState> state);
  ~ClientConnection() override;
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  void start();
  void close();  // any thread: drop the client and cancel its upstream request

  void sendComplete(unsigned status, HeaderList headers, std::string content_type,
                    std::string body) override;
  void sendHead(unsigned status, HeaderList headers, bool has_body) override;
  [[nodiscard]] bool sendChunk(std::string data) override;
  void endStream() override;
  void abortStream() override;
  [[nodiscard]] bool clientGone() const noexcept override;

 private:
  using Stream = boost::beast::basic_stream<Protocol>;
  struct WriteItem {
    // kBytes: already serialized response bytes (a head, chunks, the last chunk). Consecutive
    // kBytes items go out in one write: every write wakes the reader, and under gVisor each
    // wake-up costs far more than the copy.
    enum class Kind { kComplete, kContinue, kBytes, kAbort };
    Kind kind = Kind::kComplete;
    std::shared_ptr<boost::beast::http::response<boost::beast::http::string_body>> complete;
    std::string data;
    std::size_t flow_bytes = 0;  // body bytes counted in queued_bytes_
    bool last = false;           // the response ends with this item
  };

  void doReadHeader();
  void onReadHeader(boost::beast::error_code ec);
  void doReadBody();
  void onReadBody(boost::beast::error_code ec);
  void refuseUnread(unsigned status, const std::string& reason);
  void dispatchRequest();
  [[nodiscard]] InboundRequest takeRequest();
  void watchForClose();
  void onWatch(boost::beast::error_code ec, std::size_t bytes);
  void startNextRequest();

  void post(WriteItem item);
  void doWrite();
  void onWrite(boost::beast::error_code ec);
  void linger();
  void markGone() noexcept;
  void closeSocket();

  Stream stream_;
  std::shared_ptr<ServerState> state_;
  boost::asio::steady_timer linger_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::chrono::system_clock::time_point received_at_;
  std::chrono::steady_clock::time_point received_steady_;
  std::deque<WriteItem> writes_;
  std::string write_buffer_;  // the kBytes items being written
  std::size_t items_in_write_ = 0;
  std::string pending_head_;  // worker thread: a head waiting to go out with the first bytes
  bool writing_ = false;
  bool closed_ = false;
  // Keep-alive: set on the io thread before the request goes to a worker; cleared when the
  // connection must close after this response (unread body, client pipelining too much).
  std::atomic<bool> keep_alive_{false};  // read by the worker (sendHead/sendComplete)
  bool reusing_ = false;  // the response is out; the watch is being cancelled to read the next
  std::array<char, 1024> watch_buffer_{};
  std::string
      early_bytes_;  // what the client sent while its answer was produced (the next request)

  std::atomic<bool> gone_{false};
  std::mutex flow_mutex_;
  std::condition_variable flow_changed_;
  std::size_t queued_bytes_ = 0;  // chunk bytes posted but not yet written; flow_mutex_
};

}  // namespace sidecar
