// Real PNG files built in memory for tests (zlib for the image data and the CRCs), and the pieces
// to build broken ones: a chunk with a right or wrong CRC, an IHDR, raw scanlines.
// Tests that include this link ZLIB::ZLIB.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace testing_support {

inline constexpr std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);

inline void appendBigEndian32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> static_cast<unsigned>(shift)) & 0xFFU));
  }
}

// One chunk: length, type, data and CRC (flipped when `good_crc` is false).
inline std::string pngChunk(std::string_view type, std::string_view data, bool good_crc = true) {
  std::string chunk;
  appendBigEndian32(chunk, static_cast<std::uint32_t>(data.size()));
  std::string covered = std::string(type) + std::string(data);
  chunk += covered;
  auto crc = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(covered.data()), static_cast<uInt>(covered.size())));
  appendBigEndian32(chunk, good_crc ? crc : crc ^ 0x1U);
  return chunk;
}

struct PngShape {
  std::uint32_t width = 16;
  std::uint32_t height = 8;
  unsigned bit_depth = 8;
  unsigned color_type = 2;  // RGB
  unsigned interlace = 0;   // 1: Adam7
};

inline std::string ihdrData(const PngShape& shape, unsigned compression = 0, unsigned filter = 0) {
  std::string data;
  appendBigEndian32(data, shape.width);
  appendBigEndian32(data, shape.height);
  for (const unsigned byte :
       {shape.bit_depth, shape.color_type, compression, filter, shape.interlace}) {
    data.push_back(static_cast<char>(byte));
  }
  return data;
}

// The filtered scanlines an image of `shape` decodes from: each row filter type `filter` then
// a pattern; per Adam7 pass when interlaced (computed here independently of the checker).
inline std::string rawScanlines(const PngShape& shape, unsigned char filter = 0) {
  const unsigned channels = shape.color_type == 2   ? 3
                            : shape.color_type == 4 ? 2
                            : shape.color_type == 6 ? 4
                                                    : 1;
  const std::uint64_t bits = std::uint64_t{channels} * shape.bit_depth;
  std::string raw;
  const auto rows = [&](std::uint64_t width, std::uint64_t height) {
    for (std::uint64_t y = 0; y < height; ++y) {
      raw.push_back(static_cast<char>(filter));
      for (std::uint64_t x = 0; x < (width * bits + 7) / 8; ++x) {
        raw.push_back(static_cast<char>((x * 7 + y * 3) & 0x3FU));  // small: any palette index
      }
    }
  };
  if (shape.interlace == 0) {
    rows(shape.width, shape.height);
    return raw;
  }
  // Adam7: pixels of pass p are those at x0 + k*dx, y0 + k*dy.
  constexpr std::array<std::array<std::uint32_t, 4>, 7> kPasses{{{0, 0, 8, 8},
                                                                 {4, 0, 8, 8},
                                                                 {0, 4, 4, 8},
                                                                 {2, 0, 4, 4},
                                                                 {0, 2, 2, 4},
                                                                 {1, 0, 2, 2},
                                                                 {0, 1, 1, 2}}};
  for (const auto& [x0, y0, dx, dy] : kPasses) {
    std::uint64_t width = 0;
    std::uint64_t height = 0;
    for (std::uint32_t x = x0; x < shape.width; x += dx) ++width;
    for (std::uint32_t y = y0; y < shape.height; y += dy) ++height;
    if (width > 0) rows(width, height);
  }
  return raw;
}

inline std::string zlibCompress(std::string_view raw, int level = 6) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                level) != Z_OK) {
    throw std::runtime_error("compress2 failed");
  }
  out.resize(size);
  return out;
}

// A complete PNG around the given compressed image data, split into IDAT chunks of at most
// `idat_bytes` (a palette of 256 gray entries for color type 3).
inline std::string pngAround(const PngShape& shape, std::string_view compressed,
                             std::size_t idat_bytes = 8192) {
  std::string png(kPngSignature);
  png += pngChunk("IHDR", ihdrData(shape));
  png += pngChunk("tEXt", std::string("Software\0tests", 14));
  if (shape.color_type == 3) {
    std::string palette;
    for (unsigned i = 0; i < (1U << shape.bit_depth); ++i) palette.append(3, static_cast<char>(i));
    png += pngChunk("PLTE", palette);
  }
  do {
    png += pngChunk("IDAT", compressed.substr(0, idat_bytes));
    compressed.remove_prefix(std::min(idat_bytes, compressed.size()));
  } while (!compressed.empty());
  png += pngChunk("IEND", "");
  return png;
}

// A valid PNG of `shape`.
inline std::string makePng(const PngShape& shape = {}, std::size_t idat_bytes = 8192) {
  return pngAround(shape, zlibCompress(rawScanlines(shape)), idat_bytes);
}

}  // namespace testing_support
