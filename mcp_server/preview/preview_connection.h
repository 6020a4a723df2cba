// One browser connection to the preview listener: reads the first request's head, lets
// PreviewGate decide, has a worker open a stream to the grant's port in the sandbox
// (Sandbox::openPort: thawing or restoring the session first), then relays bytes both ways
// until either side ends or the connection idles past preview.idle_timeout_s. Everything but the
// open runs on the listener's one I/O thread. While open it keeps its session in use (never
// frozen, paused or expired under it), and it ends with an audit line.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "preview/preview_gate.h"
#include "server/session.h"
#include "server/session_registry.h"

namespace preview {

// Counters the listener keeps for /metrics. Thread-safe.
struct PreviewStats {
  std::atomic<std::uint64_t> connections_total{0};  // accepted
  std::atomic<std::uint64_t> refused_total{0};  // the head refused (PreviewGate): no sandbox touched
  std::atomic<std::uint64_t> failed_total{0};       // the sandbox's port could not be opened
  std::atomic<std::uint64_t> open{0};
  std::atomic<std::uint64_t> bytes_to_sandbox{0};
  std::atomic<std::uint64_t> bytes_from_sandbox{0};
};

// What every connection shares; owned by the listener, which outlives its connections' work.
struct PreviewContext {
  const config::PreviewConfig& config;
  server::SessionRegistry& sessions;
  PreviewGate gate;
  PreviewStats stats;
  boost::asio::io_context& io;
  boost::asio::thread_pool& openers;  // Sandbox::openPort blocks
};

class PreviewConnection : public std::enable_shared_from_this<PreviewConnection> {
 public:
  using tcp = boost::asio::ip::tcp;
  using Clock = std::chrono::steady_clock;

  PreviewConnection(PreviewContext& context, tcp::socket client);
  ~PreviewConnection();

  void start();
  // Closes both sides (listener stop); on the I/O thread.
  void close(const char* why);
  // Answers `status` with `message` and closes; on the I/O thread. Counts nothing.
  void refuse(http::status status, std::string message);
  // The same with its headers (the login's redirect).
  void answer(const Refusal& reply);

 private:
  struct Direction {
    std::array<char, 64 * 1024> buffer;
    std::uint64_t bytes = 0;
    bool ended = false;
  };

  void onHead(boost::system::error_code ec);
  void open(std::unique_ptr<PreviewGate::Admission> admission);
  void onOpened(common::UniqueFd stream, std::shared_ptr<server::SessionUse> use);
  template <typename From, typename To>
  void pump(From& from, To& to, Direction& direction, bool to_sandbox);
  void onDirectionEnded(Direction& direction);
  void tick();
  [[nodiscard]] bool grantLive() const;
  static constexpr std::chrono::seconds kTick{1};
  [[nodiscard]] std::string headBytes() const;

  PreviewContext& context_;
  tcp::socket client_;
  boost::asio::local::stream_protocol::socket sandbox_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer head_buffer_;
  boost::beast::http::request_parser<boost::beast::http::empty_body> parser_;
  std::unique_ptr<PreviewGate::Admission> admission_;
  std::shared_ptr<server::SessionUse> use_;
  Direction to_sandbox_;
  Direction from_sandbox_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_activity_ = Clock::now();
  std::string peer_;
  std::string outcome_;  // for the audit line; empty while it relays
  bool closed_ = false;
  bool relaying_ = false;
};

}  // namespace preview
