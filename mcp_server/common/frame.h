// Length-prefixed frames: a 4-byte big-endian payload length, then the payload. A JSON frame holds
// UTF-8 JSON; a data frame (the length's top bit set) holds raw bytes that belong to the JSON frame
// right before it (a file's content: no base64, no JSON escaping, no parsing). Shared by the server
// and the in-container agent. Pure, no I/O. Not thread-safe per decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace frame {

inline constexpr std::size_t kHeaderBytes = 4;
// Large enough for a base64-encoded 48 MiB file; bigger payloads are refused, never truncated.
inline constexpr std::size_t kMaxPayloadBytes = std::size_t{64} * 1024 * 1024;

class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Marks a data frame in the length field; lengths never reach it (kMaxPayloadBytes).
inline constexpr std::uint32_t kDataFrameBit = 0x80000000U;
static_assert(kMaxPayloadBytes < kDataFrameBit);

enum class FrameKind { kJson, kData };

struct Frame {
  FrameKind kind = FrameKind::kJson;
  std::string payload;
};

// The 4-byte header of a frame whose payload has `size` bytes (write the payload right after).
[[nodiscard]] inline std::string encodeHeader(std::size_t size, FrameKind kind = FrameKind::kJson) {
  if (size > kMaxPayloadBytes) {
    throw FrameError("frame payload of " + std::to_string(size) + " bytes exceeds the limit of " +
                     std::to_string(kMaxPayloadBytes));
  }
  auto n = static_cast<std::uint32_t>(size);
  if (kind == FrameKind::kData) n |= kDataFrameBit;
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

  // Returns the next complete JSON payload, or nullopt when more bytes are needed. Throws
  // FrameError when a header announces more than the limit or a data frame comes (the stream is
  // then unusable): for peers that never send data frames.
  [[nodiscard]] std::optional<std::string> next() {
    auto frame = nextFrame();
    if (!frame) return std::nullopt;
    if (frame->kind == FrameKind::kData) throw FrameError("peer sent an unexpected data frame");
    return std::move(frame->payload);
  }

  // Returns the next complete frame of either kind, or nullopt when more bytes are needed.
  // Throws FrameError when a header announces more than the limit.
  [[nodiscard]] std::optional<Frame> nextFrame() {
    if (buffer_.size() - offset_ < kHeaderBytes) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + offset_);
    const std::uint32_t header = (std::uint32_t{p[0]} << 24U) | (std::uint32_t{p[1]} << 16U) |
                                 (std::uint32_t{p[2]} << 8U) | std::uint32_t{p[3]};
    const FrameKind kind = (header & kDataFrameBit) != 0 ? FrameKind::kData : FrameKind::kJson;
    const std::size_t n = header & ~kDataFrameBit;
    if (n > max_payload_) {
      throw FrameError("peer announced a frame of " + std::to_string(n) +
                       " bytes, above the limit of " + std::to_string(max_payload_));
    }
    if (buffer_.size() - offset_ - kHeaderBytes < n) return std::nullopt;
    Frame frame{kind, buffer_.substr(offset_ + kHeaderBytes, n)};
    offset_ += kHeaderBytes + n;
    compact();
    return frame;
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
