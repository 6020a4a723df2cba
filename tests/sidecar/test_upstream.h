// A tiny HTTP/1.1 upstream on 127.0.0.1 (port 0) for the sidecar relay tests, plain sockets and a
// thread per connection. Routes:
//   POST/GET /ok/echo        200 JSON describing what arrived (method, target, headers, body)
//   GET  /ok/sse             SSE: event "one", waits for releaseSse(), event "two", end
//   GET  /ok/forever         SSE: a "tick" event every 50 ms until the peer closes
//   GET  /ok/redirect        302 to /secret on the same server
//   GET  /ok/slow            reads the request, never answers
//   POST /restricted/mcp     200 JSON-RPC result echoing the id
// Thread-safety: every public member may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sidecar_test {

class TestUpstream {
 public:
  TestUpstream();
  ~TestUpstream();
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] std::vector<std::string> targetsSeen();  // request targets, in order
  void releaseSse();
  [[nodiscard]] bool secondSseEventSent() const noexcept { return second_sse_sent_.load(); }
  // True once /ok/forever failed to write because the peer (the sidecar) closed.
  [[nodiscard]] bool waitForeverClosed(int timeout_ms);

 private:
  void acceptLoop();
  void serve(int fd);
  void serveOne(int fd);
  void route(int fd, const std::string& method, const std::string& target, const std::string& head,
             const std::string& body);

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> connections_;
  std::vector<int> open_fds_;
  std::vector<std::string> targets_;
  bool sse_released_ = false;
  bool forever_closed_ = false;
  std::atomic<bool> second_sse_sent_{false};
};

// A 127.0.0.1 port nothing listens on (bound, then closed).
[[nodiscard]] std::uint16_t unusedPort();

}  // namespace sidecar_test
