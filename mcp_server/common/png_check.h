// Whether bytes are a PNG that any decoder reads whole, checked before an image made by sandbox
// code is sent to a client as MCP image content (a model API may reject a whole turn for an
// undecodable image). Checks every chunk's CRC, the chunk order (IHDR first, PLTE where the color
// type needs it, IDAT present and contiguous, IEND last with nothing after it), IHDR's fields and
// dimensions, and inflates the image data with a hard cap at the size IHDR implies, so that a
// decompression bomb costs no more than an honest image of its stated size. Each scanline's
// filter type is checked too. Pixels are not decoded (filters are not undone).
// Pure; thread-safe; never throws for any input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace common {

// Bytes the image data of one PNG may inflate to (filtered scanlines: height * (1 + row bytes),
// per Adam7 pass when interlaced): a 4096x4096 RGBA image at 8 bits, just over 64 MiB. Bounds
// the time a check can take.
inline constexpr std::uint64_t kMaxPngDecodedBytes = std::uint64_t{4096} * (1 + 4096 * 4);
// Width and height past which no PNG is read (the PNG specification's own bound).
inline constexpr std::uint32_t kMaxPngSidePx = 0x7FFFFFFFU;

struct PngLimits {
  std::uint32_t max_side_px = kMaxPngSidePx;              // width and height
  std::uint64_t max_decoded_bytes = kMaxPngDecodedBytes;  // what the image data inflates to
};

struct PngCheck {
  bool valid = false;
  std::string reason;  // why not, one readable clause ("chunk 2 (IDAT) fails its CRC check")
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint64_t decoded_bytes = 0;  // what IHDR implies, and the image data inflated to
  bool too_large = false;           // refused only for decoding past limits.max_decoded_bytes
  explicit operator bool() const noexcept { return valid; }
};

[[nodiscard]] PngCheck checkPng(std::string_view bytes, const PngLimits& limits = {});

}  // namespace common
