// The attached stdio of a container (POST /containers/{id}/attach, upgraded to a raw stream).
// read() yields the container's stdout only (the agent's frames); stderr is the agent's own
// diagnostics: logged with the container id and kept as a short tail for error messages.
// stderr is treated as hostile text: lines are cut at kMaxStderrLineBytes (a line without a
// newline never grows beyond that), escaped, logged at DEBUG only and rate-limited; lines over
// the rate are dropped and counted.
// Thread-safety: as ByteStream; stderrTail() and droppedStderrLines() may be called from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "sandbox/byte_stream.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/stream_demux.h"

namespace sandbox::docker {

class AttachStream : public ByteStream {
 public:
  inline static constexpr std::size_t kStderrTailBytes = 4096;
  inline static constexpr std::size_t kMaxStderrLineBytes = 4096;
  // Lines logged per window; the rest of the window's lines are counted, not logged.
  inline static constexpr int kStderrLinesPerWindow = 50;
  inline static constexpr std::chrono::seconds kStderrWindow{10};

  // Attaches to stdin/stdout/stderr of a created (not yet started) container, so no output is
  // missed. Throws EngineError.
  static std::unique_ptr<AttachStream> open(EngineClient& engine, const std::string& container_id,
                                            std::chrono::milliseconds send_timeout);

  AttachStream(UpgradedConnection connection, std::string container_id,
               std::chrono::milliseconds send_timeout);

  std::size_t read(std::string& out) override;
  void write(std::string_view bytes) override { socket_.write(bytes); }
  void shutdown() noexcept override { socket_.shutdown(); }

  // The last few KiB the agent wrote to stderr.
  [[nodiscard]] std::string stderrTail() const;
  // stderr lines not logged because of the rate limit.
  [[nodiscard]] std::uint64_t droppedStderrLines() const noexcept { return dropped_lines_.load(); }

 private:
  using Clock = std::chrono::steady_clock;

  void onStderr(std::string_view bytes);
  void logLine(std::string_view line, bool cut);

  std::unique_ptr<StreamPump> pump_;  // TLS engines: relays socket_ to the TLS stream
  SocketStream socket_;
  std::string container_id_;
  std::string pending_raw_;  // bytes the HTTP parser read past the 101 reply (consumed first)
  StreamDemux demux_;
  // Reader thread only: stderr text after the last newline (at most kMaxStderrLineBytes), and
  // whether the current line was already cut (the rest of it is skipped up to its newline).
  std::string partial_line_;
  bool skipping_rest_of_line_ = false;
  Clock::time_point window_start_{};
  int window_lines_ = 0;
  std::atomic<std::uint64_t> dropped_lines_{0};
  mutable std::mutex tail_mutex_;
  std::string stderr_tail_;
};

}  // namespace sandbox::docker
