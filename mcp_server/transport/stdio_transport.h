// MCP stdio transport: newline-delimited JSON-RPC on a pair of file descriptors (stdin/stdout
// in production, pipes in tests). Thread-safety: run() is called once, from one thread; stop()
// may be called from any thread or a signal handler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/worker_pool.h"
#include "jsonrpc/endpoint.h"

namespace transport {

struct StdioTransportOptions {
  // Longest accepted line (one message or batch), bytes. Config: stdio.max_message_bytes.
  std::size_t max_message_bytes = std::size_t{16} * 1024 * 1024;
  // Threads running Endpoint::handle for requests. Notifications, responses and pings run on
  // the reader thread, so they never queue behind long tool calls.
  std::size_t worker_threads = 4;
  std::size_t max_worker_threads = 80;  // grown to when requests would wait (WorkerPool)
  // On EOF, how long requests still running may take before the endpoint is closed anyway.
  std::chrono::milliseconds drain_timeout{10'000};
};

class StdioTransport {
 public:
  // Does not take ownership of the fds. Opens one endpoint, owner "stdio", inside run().
  StdioTransport(int in_fd, int out_fd, std::shared_ptr<jsonrpc::EndpointFactory> factory,
                 StdioTransportOptions options = {});
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  // Serves until EOF on in_fd (or stop(), or a read error, which is logged), waits up to
  // drain_timeout for running requests, closes the endpoint and returns. Throws only if the
  // factory does, or std::system_error if the wake-up pipe cannot be created.
  void run();

  // Makes run() behave as if EOF had been reached. Async-signal-safe (a single write()).
  void stop() noexcept;

 private:
  void dispatchLine(std::string_view line);
  void dispatchMessage(jsonrpc::json message);
  // Returns true when the answer comes later (jsonrpc::Reply), through finishInFlight().
  bool handleNow(const jsonrpc::json& message, std::shared_ptr<CancelToken> cancel = nullptr,
                 bool may_answer_later = false);
  void finishInFlight();
  void writeMessage(const jsonrpc::json& message) noexcept;
  void writeOversizeError() noexcept;
  void waitForInFlight();

  int in_fd_;
  int out_fd_;
  std::shared_ptr<jsonrpc::EndpointFactory> factory_;
  StdioTransportOptions options_;
  std::shared_ptr<jsonrpc::Endpoint> endpoint_;
  common::WorkerPool pool_;
  int wake_pipe_[2] = {-1, -1};  // stop() writes a byte to unblock poll() in run()

  std::mutex write_mutex_;  // one message per line: never interleave writers
  bool output_broken_ = false;

  std::mutex in_flight_mutex_;
  std::condition_variable in_flight_done_;
  std::size_t in_flight_ = 0;
};

}  // namespace transport
