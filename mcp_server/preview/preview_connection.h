// One browser connection to the preview listener. Every request's head is read and checked
// (PreviewGate): the first one decides the grant and has a worker open a stream to its port in
// the sandbox (Sandbox::openPort: thawing or restoring the session first); each later one must
// name the same grant (a front that reuses connections across users cannot mix sessions), and
// loses the login cookie too. Heads go on in a canonical form, bodies by their own framing
// (chunked bodies re-chunked), so what was checked is what the sandbox gets. After an upgrade
// (WebSocket) both directions are relayed as they come. Answers from the sandbox are relayed as
// they come. Ends when either side ends, its grant ends, or it idles past
// preview.idle_timeout_s. Everything but the open runs on the listener's one I/O thread. While
// open it keeps its session in use (never frozen, paused or expired under it), and it ends with
// an audit line.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "preview/preview_gate.h"
#include "server/session.h"
#include "server/session_registry.h"
#include "transport/connection_limiter.h"

namespace preview {

// Counters the listener keeps for /metrics. Thread-safe.
struct PreviewStats {
  std::atomic<std::uint64_t> connections_total{0};  // accepted
  std::atomic<std::uint64_t> refused_total{
      0};                                      // the head refused (PreviewGate): no sandbox touched
  std::atomic<std::uint64_t> failed_total{0};  // the sandbox's port could not be opened
  std::atomic<std::uint64_t> open{0};
  std::atomic<std::uint64_t> bytes_to_sandbox{0};
  std::atomic<std::uint64_t> bytes_from_sandbox{0};
};

class PreviewConnection;

// Opens run on a small pool and may each wait seconds (a restore, a port that does not accept):
// a session has at most kOpensPerSession of them running, the rest wait their turn here, so one
// session cannot hold every opener. Used on the I/O thread only.
class OpenQueue {
 public:
  static constexpr int kOpensPerSession = 2;
  // Runs `start` now, or once an earlier open of `key` finished.
  void enqueue(const std::string& key, std::function<void()> start);
  void finished(const std::string& key);

 private:
  struct Opens {
    int running = 0;
    std::deque<std::function<void()>> waiting;
  };
  std::map<std::string, Opens> sessions_;
};

// What every connection shares; owned by the listener, which outlives its connections' work.
struct PreviewContext {
  const config::PreviewConfig& config;
  server::SessionRegistry& sessions;
  PreviewGate gate;
  PreviewStats stats;
  boost::asio::io_context& io;
  boost::asio::thread_pool& openers;  // Sandbox::openPort blocks
  OpenQueue opens;
  std::atomic<bool> stopping{false};  // queued opens do nothing once set
};

class PreviewConnection : public std::enable_shared_from_this<PreviewConnection> {
 public:
  using tcp = boost::asio::ip::tcp;
  using Clock = std::chrono::steady_clock;

  PreviewConnection(PreviewContext& context, tcp::socket client);
  ~PreviewConnection();

  // `slot`: its place under preview.max_connections; reclaimable until its first head arrives.
  void start(transport::ConnectionLimiter::Slot slot);
  // Closes both sides (listener stop); on the I/O thread.
  void close(const char* why);
  // Answers `status` with `message` and closes; on the I/O thread. Counts nothing.
  void refuse(http::status status, std::string message);
  // The same with its headers (the login's redirect).
  void answer(const Refusal& reply);

  // An open that takes longer (queued behind others of its session included) gets 504.
  static constexpr std::chrono::seconds kOpenDeadline{30};

 private:
  using RequestParser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
  using RelayBuffer = std::array<char, std::size_t{64} * 1024>;

  void readHead();
  void onHead(boost::system::error_code ec);
  void onFirstHead();
  void open();
  void onOpened(common::UniqueFd stream, std::shared_ptr<server::SessionUse> use,
                const std::string& failure);
  // The current request: its head, then its body, then the next request (or, after an upgrade,
  // the raw relay).
  void forwardHead();
  void readBody();
  void onRequestDone();
  // Writes `bytes` to the sandbox, then calls `next`.
  void toSandbox(const std::shared_ptr<std::string>& bytes, std::function<void()> next);
  template <typename From, typename To>
  void relayRaw(From& from, To& to, RelayBuffer& buffer, bool to_sandbox);
  void onSideEnded(bool to_sandbox);
  void tick();
  [[nodiscard]] bool grantLive() const;
  [[nodiscard]] std::string headBytes() const;
  [[nodiscard]] bool countBytes(std::size_t n, bool to_sandbox);
  void releaseSession();
  static constexpr std::chrono::seconds kTick{1};

  PreviewContext& context_;
  tcp::socket client_;
  boost::asio::local::stream_protocol::socket sandbox_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer client_buffer_;  // bytes read from the browser, not yet parsed
  std::optional<RequestParser> parser_;      // the current request's
  transport::ConnectionLimiter::Slot slot_;
  std::unique_ptr<PreviewGate::Admission> admission_;
  std::shared_ptr<server::SessionUse> use_;
  RelayBuffer up_buffer_{};    // browser -> sandbox (bodies, then raw)
  RelayBuffer down_buffer_{};  // sandbox -> browser
  std::uint64_t bytes_up_ = 0;
  std::uint64_t bytes_down_ = 0;
  bool up_ended_ = false;
  bool down_ended_ = false;
  bool chunked_ = false;  // the current request's body is re-chunked
  bool upgrade_ = false;  // the current request asks for an upgrade: raw after it
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_activity_ = Clock::now();
  std::string peer_;
  std::string outcome_;  // for the audit line
  std::string queue_key_;
  bool answering_ = false;  // an answer of the listener's own is being written
  bool closed_ = false;
};

}  // namespace preview
