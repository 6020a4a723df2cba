// Length-prefixed frames: a 4-byte big-endian payload length, then the payload (UTF-8 JSON).
// Shared by the server and the in-container agent. Pure, no I/O. Not thread-safe per decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace frame {

inline constexpr std::size_t kHeaderBytes = 4;
// Large enough for a base64-encoded 48 MiB file; bigger payloads are refused, never truncated.
inline constexpr std::size_t kMaxPayloadBytes = std::size_t{64} * 1024 * 1024;

class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The 4-byte header of a frame whose payload has `size` bytes (write the payload right after).
[[nodiscard]] inline std::string encodeHeader(std::size_t size) {
  if (size > kMaxPayloadBytes) {
    throw FrameError("frame payload of " + std::to_string(size) + " bytes exceeds the limit of " +
                     std::to_string(kMaxPayloadBytes));
  }
  const auto n = static_cast<std::uint32_t>(size);
  return std::string{static_cast<char>((n >> 24U) & 0xFFU), static_cast<char>((n >> 16U) & 0xFFU),
                     static_cast<char>((n >> 8U) & 0xFFU), static_cast<char>(n & 0xFFU)};
}

[[nodiscard]] inline std::string encode(std::string_view payload) {
  std::string out = encodeHeader(payload.size());
  out.reserve(kHeaderBytes + payload.size());
  out.append(payload);
  return out;
}

// Accumulates bytes as they arrive and yields whole payloads in order.
class Decoder {
 public:
  explicit Decoder(std::size_t max_payload = kMaxPayloadBytes) : max_payload_(max_payload) {}

  void feed(std::string_view bytes) { buffer_.append(bytes); }

  // Returns the next complete payload, or nullopt when more bytes are needed.
  // Throws FrameError when a header announces more than the limit (the stream is then unusable).
  [[nodiscard]] std::optional<std::string> next() {
    if (buffer_.size() - offset_ < kHeaderBytes) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + offset_);
    const std::size_t n = (std::size_t{p[0]} << 24U) | (std::size_t{p[1]} << 16U) |
                          (std::size_t{p[2]} << 8U) | std::size_t{p[3]};
    if (n > max_payload_) {
      throw FrameError("peer announced a frame of " + std::to_string(n) +
                       " bytes, above the limit of " + std::to_string(max_payload_));
    }
    if (buffer_.size() - offset_ - kHeaderBytes < n) return std::nullopt;
    std::string payload = buffer_.substr(offset_ + kHeaderBytes, n);
    offset_ += kHeaderBytes + n;
    compact();
    return payload;
  }

  [[nodiscard]] std::size_t buffered() const noexcept { return buffer_.size() - offset_; }

 private:
  // Drop consumed bytes once they dominate, so decoding stays linear in the bytes received.
  void compact() {
    if (offset_ == buffer_.size()) {
      buffer_.clear();
      offset_ = 0;
    } else if (offset_ > 65536 && offset_ * 2 > buffer_.size()) {
      buffer_.erase(0, offset_);
      offset_ = 0;
    }
  }

  std::size_t max_payload_;
  std::string buffer_;
  std::size_t offset_ = 0;
};

}  // namespace frame
