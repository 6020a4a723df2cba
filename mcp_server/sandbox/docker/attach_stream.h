// The attached stdio of a container (POST /containers/{id}/attach, upgraded to a raw stream).
// read() yields the container's stdout only (the agent's frames); stderr is the agent's own
// diagnostics: logged with the container id and kept as a short tail for error messages.
// Thread-safety: as ByteStream; stderrTail() may be called from any thread.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "sandbox/byte_stream.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/stream_demux.h"

namespace sandbox::docker {

class AttachStream : public ByteStream {
 public:
  inline static constexpr std::size_t kStderrTailBytes = 4096;

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

 private:
  void onStderr(std::string_view bytes);
  void logLine(std::string_view line) const;

  SocketStream socket_;
  std::string container_id_;
  std::string pending_raw_;  // bytes the HTTP parser read past the 101 reply (consumed first)
  StreamDemux demux_;
  std::string partial_line_;  // stderr text after the last newline, reader thread only
  mutable std::mutex tail_mutex_;
  std::string stderr_tail_;
};

}  // namespace sandbox::docker
