// common::checkPng decides whether an image made by sandbox code may be sent on as MCP image
// content: real PNGs of every color type, depth and interlacing pass; each way of breaking one
// (a CRC, the chunk order, IHDR's fields, the image data's size) is refused with its reason.
#include "common/png_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "../support/png_fixture.h"

namespace {

using testing_support::ihdrData;
using testing_support::kPngSignature;
using testing_support::makePng;
using testing_support::pngAround;
using testing_support::pngChunk;
using testing_support::PngShape;
using testing_support::rawScanlines;
using testing_support::zlibCompress;

// Signature, IHDR of `shape`, then `rest` as given.
std::string pngWith(const PngShape& shape, const std::string& rest) {
  return std::string(kPngSignature) + pngChunk("IHDR", ihdrData(shape)) + rest;
}

std::string idat(const PngShape& shape) {
  return pngChunk("IDAT", zlibCompress(rawScanlines(shape)));
}

const std::string kIend = pngChunk("IEND", "");

TEST(PngCheck, AcceptsRealPngsOfEveryKind) {
  struct Case {
    const char* name;
    std::string png;
    std::uint64_t decoded_bytes;
  };
  const Case cases[] = {
      {"RGB, 8 bits", makePng({16, 8, 8, 2, 0}), 8 * (1 + 48)},
      {"grayscale, 1 bit, width not a multiple of 8", makePng({33, 7, 1, 0, 0}), 7 * (1 + 5)},
      {"palette, 4 bits", makePng({20, 5, 4, 3, 0}), 5 * (1 + 10)},
      {"palette, 8 bits", makePng({3, 3, 8, 3, 0}), 3 * (1 + 3)},
      {"grayscale with alpha, 16 bits", makePng({5, 4, 16, 4, 0}), 4 * (1 + 20)},
      {"RGBA, 16 bits", makePng({9, 9, 16, 6, 0}), 9 * (1 + 72)},
      // Adam7 passes of 13x11 (width x rows): 2x2, 2x2, 4x1, 3x3, 7x3, 6x6, 13x5 pixels.
      {"RGB, Adam7, odd size", makePng({13, 11, 8, 2, 1}),
       2 * 7 + 2 * 7 + 1 * 13 + 3 * 10 + 3 * 22 + 6 * 19 + 5 * 40},
      {"RGBA, Adam7, 1x1 (six empty passes)", makePng({1, 1, 8, 6, 1}), 5},
      // Passes of 3x9: 1x2, none, 1x1, 1x3, 2x2, 1x5, 3x4 pixels; every row holds 1 byte.
      {"grayscale, 2 bits, Adam7, 3x9", makePng({3, 9, 2, 0, 1}), (2 + 1 + 3 + 2 + 5 + 4) * 2},
      {"image data in 1-byte IDAT chunks", makePng({16, 8, 8, 2, 0}, 1), 8 * (1 + 48)},
      {"an empty IDAT chunk among them",
       pngWith({}, pngChunk("IDAT", "") + idat({}) + pngChunk("IDAT", "") + kIend), 8 * 49},
      {"filter type 4 (Paeth) on every row", pngAround({}, zlibCompress(rawScanlines({}, 4))),
       8 * 49},
      {"ancillary chunks after the image data",
       pngWith({}, idat({}) + pngChunk("tIME", std::string(7, '\1')) + kIend), 8 * 49},
  };
  for (const auto& c : cases) {
    const auto result = common::checkPng(c.png);
    EXPECT_TRUE(result) << c.name << ": " << result.reason;
    EXPECT_EQ(result.reason, "") << c.name;
    EXPECT_EQ(result.decoded_bytes, c.decoded_bytes) << c.name;
  }
  const auto result = common::checkPng(makePng({640, 480, 8, 6, 0}));
  EXPECT_EQ(result.width, 640U);
  EXPECT_EQ(result.height, 480U);
}

TEST(PngCheck, RefusesBrokenPngsAndSaysWhy) {
  const PngShape rgb;  // 16x8 RGB: 392 bytes of scanlines
  const std::string compressed = zlibCompress(rawScanlines(rgb));
  const std::string valid = makePng(rgb);
  std::string bad_ihdr_crc = valid;
  bad_ihdr_crc[8 + 8 + 13 + 3] ^= 0x40;  // the CRC's last byte
  std::string ihdr_data_flipped = valid;
  ihdr_data_flipped[8 + 8 + 3] ^= 0x01;  // the width: the CRC no longer matches
  std::string palette16;
  for (int i = 0; i < 17; ++i) palette16 += "abc";
  const std::string lots_of_zeros(4 * 1024 * 1024, '\0');
  struct Case {
    const char* name;
    std::string png;
    const char* reason;
    common::PngLimits limits = {};
  };
  const Case cases[] = {
      {"no signature", "GIF89a" + valid.substr(6), "it has no PNG signature"},
      {"empty", "", "it has no PNG signature"},
      {"signature only", std::string(kPngSignature), "ends without an IEND chunk"},
      {"header junk in place of IHDR: the signature, an IHDR with a bad CRC and junk",
       std::string(kPngSignature) + pngChunk("IHDR", ihdrData(rgb), false) + "junk junk junk",
       "chunk 1 (IHDR) fails its CRC check"},
      {"bad CRC in IHDR", bad_ihdr_crc, "chunk 1 (IHDR) fails its CRC check"},
      {"IHDR changed under its CRC", ihdr_data_flipped, "chunk 1 (IHDR) fails its CRC check"},
      {"bad CRC in IDAT", pngWith(rgb, pngChunk("IDAT", compressed, false) + kIend),
       "chunk 2 (IDAT) fails its CRC check"},
      {"bad CRC in an ancillary chunk",
       pngWith(rgb, pngChunk("tEXt", "a\0b", false) + idat(rgb) + kIend),
       "chunk 2 (tEXt) fails its CRC check"},
      {"missing IDAT", pngWith(rgb, kIend), "there is no IDAT chunk"},
      {"missing IDAT and IEND", pngWith(rgb, ""), "there is no IDAT chunk and"},
      {"missing IEND", pngWith(rgb, idat(rgb)), "the data ends without an IEND chunk"},
      {"IEND not last: a chunk after it", valid + pngChunk("tEXt", "late"),
       "16 bytes follow the IEND chunk"},
      {"trailing junk after IEND", valid + "junk", "4 bytes follow the IEND chunk"},
      {"IEND with data", pngWith(rgb, idat(rgb) + pngChunk("IEND", "x")),
       "chunk 3 (IEND) is not empty"},
      {"IHDR not first",
       std::string(kPngSignature) + pngChunk("tEXt", "a") + pngChunk("IHDR", ihdrData(rgb)) +
           idat(rgb) + kIend,
       "the first chunk is tEXt, not IHDR"},
      {"IHDR of 12 bytes",
       std::string(kPngSignature) + pngChunk("IHDR", ihdrData(rgb).substr(0, 12)) + idat(rgb) +
           kIend,
       "IHDR holds 12 bytes instead of 13"},
      {"a second IHDR", pngWith(rgb, pngChunk("IHDR", ihdrData(rgb)) + idat(rgb) + kIend),
       "chunk 2 (IHDR) repeats the header"},
      {"bit depth 3", makePng({16, 8, 3, 0, 0}), "bit depth 3, not allowed with color type 0"},
      {"bit depth 4 with RGB", pngWith({16, 8, 4, 2, 0}, idat(rgb) + kIend),
       "bit depth 4, not allowed with color type 2 (RGB)"},
      {"bit depth 16 with a palette", pngWith({16, 8, 16, 3, 0}, idat(rgb) + kIend),
       "bit depth 16, not allowed with color type 3 (palette)"},
      {"color type 5", pngWith({16, 8, 8, 5, 0}, idat(rgb) + kIend), "IHDR gives color type 5"},
      {"compression method 1",
       std::string(kPngSignature) + pngChunk("IHDR", ihdrData(rgb, 1)) + idat(rgb) + kIend,
       "compression method 1, filter method 0, interlace method 0"},
      {"filter method 1",
       std::string(kPngSignature) + pngChunk("IHDR", ihdrData(rgb, 0, 1)) + idat(rgb) + kIend,
       "filter method 1"},
      {"interlace method 2", pngWith({16, 8, 8, 2, 2}, idat(rgb) + kIend), "interlace method 2"},
      {"zero width", pngWith({0, 8, 8, 2, 0}, idat(rgb) + kIend), "IHDR gives a size of 0x8 px"},
      {"zero height", pngWith({16, 0, 8, 2, 0}, idat(rgb) + kIend), "IHDR gives a size of 16x0 px"},
      {"a side past 2^31-1", pngWith({0x80000000U, 1, 8, 2, 0}, idat(rgb) + kIend),
       "is over the 2147483647 px allowed per side"},
      {"a side past the limit",
       makePng({1569, 2, 8, 0, 0}),
       "1569x2 px, is over the 1568 px allowed per side",
       {1568, common::kMaxPngDecodedBytes}},
      {"huge dimensions within the side limit: 8192x8192 RGBA at 16 bits",
       pngWith({8192, 8192, 16, 6, 0}, idat(rgb) + kIend),
       "8192x8192 px at 16 bits per channel (RGBA) would decode to more than the 67112960 bytes"},
      {"a decompression bomb: 4 MiB from an IDAT for 392 bytes",
       pngAround(rgb, zlibCompress(lots_of_zeros, 9)),
       "inflates to more than the 392 bytes its IHDR implies (a decompression bomb)"},
      {"one byte too many", pngAround(rgb, zlibCompress(rawScanlines(rgb) + '\0')),
       "inflates to more than the 392 bytes"},
      {"a row short", pngAround(rgb, zlibCompress(rawScanlines(rgb).substr(49))),
       "inflates to 343 bytes, less than the 392 its IHDR implies"},
      {"truncated inflate", pngAround(rgb, compressed.substr(0, compressed.size() / 2)),
       "the image data is cut short: its zlib stream does not end"},
      {"checksum cut off", pngAround(rgb, compressed.substr(0, compressed.size() - 4)),
       "the image data is cut short"},
      {"not zlib", pngAround(rgb, "this is not deflate data"),
       "the image data is not a valid zlib stream"},
      {"data after the zlib stream", pngAround(rgb, compressed + "xx"),
       "compressed data follows the end of the image data's zlib stream"},
      {"an IDAT after the zlib stream", pngWith(rgb, idat(rgb) + pngChunk("IDAT", "x") + kIend),
       "compressed data follows the end"},
      {"IDAT chunks apart",
       pngWith(rgb, pngChunk("IDAT", compressed.substr(0, 10)) + pngChunk("tEXt", "a") +
                        pngChunk("IDAT", compressed.substr(10)) + kIend),
       "chunk 4 (IDAT) is apart from the IDAT chunks before it"},
      {"interlace flag on progressive data", pngWith({16, 8, 8, 2, 1}, idat(rgb) + kIend),
       "scanline 2 has filter type 42"},
      {"filter type 5", pngAround(rgb, zlibCompress(rawScanlines(rgb, 5))),
       "scanline 1 has filter type 5 (PNG defines 0 to 4)"},
      {"palette image without PLTE", pngWith({16, 8, 8, 3, 0}, idat(rgb) + kIend),
       "color type 3 (palette) needs a PLTE chunk"},
      {"PLTE with grayscale", pngWith({16, 8, 8, 0, 0}, pngChunk("PLTE", "abc") + kIend),
       "a PLTE chunk comes with color type grayscale"},
      {"PLTE past 2^depth entries", pngWith({16, 8, 4, 3, 0}, pngChunk("PLTE", palette16) + kIend),
       "the PLTE chunk holds 51 bytes (3 per entry, 1 to 16 entries)"},
      {"PLTE after IDAT", pngWith(rgb, idat(rgb) + pngChunk("PLTE", "abc") + kIend),
       "comes after the image data"},
      {"an unknown critical chunk", pngWith(rgb, pngChunk("ABCD", "") + idat(rgb) + kIend),
       "chunk 2 (ABCD) is critical but unknown"},
      {"a chunk type that is not letters", pngWith(rgb, pngChunk("a1b2", "") + idat(rgb) + kIend),
       "chunk 2 has a type that is not four letters"},
  };
  for (const auto& c : cases) {
    const auto result = common::checkPng(c.png, c.limits);
    EXPECT_FALSE(result) << c.name;
    EXPECT_NE(result.reason.find(c.reason), std::string::npos) << c.name << ": " << result.reason;
  }
}

TEST(PngCheck, AChunkLengthPastTheEndIsRefusedNotRead) {
  const std::string valid = makePng();
  struct Case {
    const char* name;
    std::string png;
    const char* reason;
  };
  std::string long_idat = valid;
  long_idat[valid.find("IDAT") - 4] = '\x7F';  // the high byte of IDAT's length: about 2 GiB
  const Case cases[] = {
      {"file cut inside IEND", valid.substr(0, valid.size() - 2),
       "the data ends inside chunk 4's header (10 bytes left)"},
      {"file cut inside IDAT's data", valid.substr(0, valid.size() - 20), "chunk 3 (IDAT) claims"},
      {"IDAT length of about 2 GiB", long_idat, "chunk 3 (IDAT) claims 213070"},
      {"a length of 2^32-1", pngWith({}, std::string("\xFF\xFF\xFF\xFFIDAT", 8) + "xxxx"),
       "chunk 2 (IDAT) claims 4294967295 bytes of data; 0 are left"},
  };
  for (const auto& c : cases) {
    const auto result = common::checkPng(c.png);
    EXPECT_FALSE(result) << c.name;
    EXPECT_NE(result.reason.find(c.reason), std::string::npos) << c.name << ": " << result.reason;
  }
}

TEST(PngCheck, SaysWhenOnlyTheDecodedSizeWasTooLarge) {
  const PngShape rgb;  // 392 bytes of scanlines
  EXPECT_TRUE(common::checkPng(makePng(rgb), {1568, 391}).too_large);
  EXPECT_TRUE(common::checkPng(makePng(rgb), {1568, 392}));
  std::string bad_crc = makePng(rgb);
  bad_crc[bad_crc.size() - 1] ^= 0x01;  // IEND's CRC
  EXPECT_FALSE(common::checkPng(bad_crc, {1568, 391}).too_large);
  EXPECT_FALSE(common::checkPng(makePng({2000, 1, 8, 0, 0}), {1568, 1 << 20}).too_large);
}

// Under the sanitizers: each prefix is its own allocation, so a read past the end is caught.
TEST(PngCheck, EveryTruncationAndEveryFlippedBitIsRefused) {
  const std::string valid = makePng({7, 5, 8, 6, 1});
  ASSERT_TRUE(common::checkPng(valid));
  for (std::size_t size = 0; size < valid.size(); ++size) {
    const std::string prefix = valid.substr(0, size);
    EXPECT_FALSE(common::checkPng(prefix)) << "cut at " << size;
  }
  // Every byte is the signature, a length, a type, data under a CRC, or a CRC.
  for (std::size_t at = 0; at < valid.size(); ++at) {
    for (unsigned bit = 0; bit < 8; ++bit) {
      std::string flipped = valid;
      flipped[at] = static_cast<char>(flipped[at] ^ (1U << bit));
      EXPECT_FALSE(common::checkPng(flipped)) << "byte " << at << " bit " << bit;
    }
  }
}

// Corrupt image data under a right CRC reaches zlib: refused or, if zlib takes it, exactly sized.
TEST(PngCheck, CorruptImageDataUnderARightCrcNeverReadsOrWritesOutOfBounds) {
  const PngShape shape{7, 5, 8, 6, 1};
  const std::string compressed = zlibCompress(rawScanlines(shape));
  const auto expected = rawScanlines(shape).size();
  for (std::size_t at = 0; at < compressed.size(); ++at) {
    for (const unsigned char mask : {0x01, 0x10, 0x80, 0xFF}) {
      std::string data = compressed;
      data[at] = static_cast<char>(data[at] ^ mask);
      const auto result = common::checkPng(pngAround(shape, data));
      EXPECT_TRUE(result ? result.decoded_bytes == expected : !result.reason.empty()) << at;
    }
  }
}

// The check runs on every image a cell shows: a 1 MiB PNG that does not compress costs about a
// millisecond or two in a release build; this bound only catches a check gone quadratic.
TEST(PngCheck, AOneMebibytePngChecksQuickly) {
  PngShape shape{600, 580, 8, 2, 0};  // 1,044,580 bytes of scanlines
  std::string raw = rawScanlines(shape);
  std::uint32_t noise = 1;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    noise = noise * 1103515245U + 12345U;
    if (i % (1 + 1800) != 0) raw[i] = static_cast<char>(noise >> 24U);
  }
  const std::string png = pngAround(shape, zlibCompress(raw), 65536);
  ASSERT_GT(png.size(), 1000000U);
  const auto start = std::chrono::steady_clock::now();
  const auto result = common::checkPng(png);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(result) << result.reason;
  EXPECT_LT(took, std::chrono::seconds(3));  // linear: a quadratic check takes minutes
}

}  // namespace
