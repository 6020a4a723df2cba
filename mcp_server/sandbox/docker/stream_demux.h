// Splits Docker's multiplexed attach output (Tty=false) into stdout and stderr bytes.
// Each record is an 8-byte header [stream, 0, 0, 0, size (4 bytes, big-endian)] and `size`
// payload bytes; headers and payloads may arrive split anywhere. Pure, no I/O. Not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sandbox::docker {

enum class StreamId : std::uint8_t { kStdin = 0, kStdout = 1, kStderr = 2 };

class DemuxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StreamDemux {
 public:
  inline static constexpr std::size_t kHeaderBytes = 8;

  // Appends the payload bytes found in `bytes` to `out_stdout` / `out_stderr`.
  // Throws DemuxError on a header with an unknown stream id (the stream is then unusable).
  void feed(std::string_view bytes, std::string& out_stdout, std::string& out_stderr);

  // True when no record is partially received (a clean place for the stream to end).
  [[nodiscard]] bool atBoundary() const noexcept {
    return header_filled_ == 0 && payload_left_ == 0;
  }

 private:
  std::array<unsigned char, kHeaderBytes> header_{};
  std::size_t header_filled_ = 0;
  std::size_t payload_left_ = 0;
  StreamId current_ = StreamId::kStdout;
};

}  // namespace sandbox::docker
