#include "common/png_check.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

namespace common {
namespace {

using Refusal = std::optional<std::string>;

constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
constexpr std::size_t kChunkOverhead = 12;  // length, type and CRC around the data
constexpr std::uint32_t kMaxChunkLength = 0x7FFFFFFFU;
constexpr std::size_t kInflateBufferBytes = std::size_t{256} * 1024;

struct Header {  // IHDR's fields
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  unsigned bit_depth = 0;
  unsigned color_type = 0;
  unsigned compression = 0;
  unsigned filter = 0;
  unsigned interlace = 0;
};

// What the walk over the chunks found: the header and the image data, in order.
struct Layout {
  Header header;
  bool has_palette = false;
  std::vector<std::string_view> image_data;  // the IDAT chunks' data
};

// Rows of one pass (the whole image when not interlaced); stride counts the filter byte.
struct Pass {
  std::uint64_t rows = 0;
  std::uint64_t stride = 0;
};

std::uint32_t bigEndian32(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    value = (value << 8U) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

std::string chunkName(std::size_t index, std::string_view type) {
  return "chunk " + std::to_string(index) + " (" + std::string(type) + ")";
}

bool isLetter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// Reads the chunk at `at` (its length, type and CRC) and moves `at` past it.
Refusal readChunk(std::string_view bytes, std::size_t& at, std::size_t index,
                  std::string_view& type, std::string_view& data) {
  if (bytes.size() - at < kChunkOverhead) {
    return "the data ends inside chunk " + std::to_string(index) + "'s header (" +
           std::to_string(bytes.size() - at) + " bytes left)";
  }
  const std::uint32_t length = bigEndian32(bytes, at);
  type = bytes.substr(at + 4, 4);
  if (!std::all_of(type.begin(), type.end(), isLetter)) {
    return "chunk " + std::to_string(index) + " has a type that is not four letters";
  }
  if (length > kMaxChunkLength || length > bytes.size() - at - kChunkOverhead) {
    return chunkName(index, type) + " claims " + std::to_string(length) + " bytes of data; " +
           std::to_string(bytes.size() - at - kChunkOverhead) + " are left";
  }
  data = bytes.substr(at + 8, length);
  const auto* covered = reinterpret_cast<const Bytef*>(bytes.data() + at + 4);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), covered, static_cast<uInt>(length + 4));
  if (crc != bigEndian32(bytes, at + 8 + length)) {
    return chunkName(index, type) + " fails its CRC check";
  }
  at += kChunkOverhead + length;
  return std::nullopt;
}

const char* colorTypeName(unsigned color_type) {
  switch (color_type) {
    case 0:
      return "grayscale";
    case 2:
      return "RGB";
    case 3:
      return "palette";
    case 4:
      return "grayscale with alpha";
    case 6:
      return "RGBA";
    default:
      return nullptr;
  }
}

unsigned channels(unsigned color_type) {
  switch (color_type) {
    case 2:
      return 3;
    case 4:
      return 2;
    case 6:
      return 4;
    default:
      return 1;  // grayscale, palette
  }
}

bool bitDepthAllowed(unsigned color_type, unsigned bit_depth) {
  switch (color_type) {
    case 0:
      return bit_depth == 1 || bit_depth == 2 || bit_depth == 4 || bit_depth == 8 ||
             bit_depth == 16;
    case 3:
      return bit_depth == 1 || bit_depth == 2 || bit_depth == 4 || bit_depth == 8;
    default:
      return bit_depth == 8 || bit_depth == 16;
  }
}

Refusal checkHeader(std::string_view data, const PngLimits& limits, Header& header) {
  if (data.size() != 13) {
    return "IHDR holds " + std::to_string(data.size()) + " bytes instead of 13";
  }
  header.width = bigEndian32(data, 0);
  header.height = bigEndian32(data, 4);
  header.bit_depth = static_cast<unsigned char>(data[8]);
  header.color_type = static_cast<unsigned char>(data[9]);
  header.compression = static_cast<unsigned char>(data[10]);
  header.filter = static_cast<unsigned char>(data[11]);
  header.interlace = static_cast<unsigned char>(data[12]);
  const std::string size = std::to_string(header.width) + "x" + std::to_string(header.height);
  if (header.width == 0 || header.height == 0) return "IHDR gives a size of " + size + " px";
  const std::uint32_t max_side = std::min(limits.max_side_px, kMaxPngSidePx);
  if (header.width > max_side || header.height > max_side) {
    return "its size, " + size + " px, is over the " + std::to_string(max_side) +
           " px allowed per side";
  }
  const char* color = colorTypeName(header.color_type);
  if (color == nullptr) return "IHDR gives color type " + std::to_string(header.color_type);
  if (!bitDepthAllowed(header.color_type, header.bit_depth)) {
    return "IHDR gives bit depth " + std::to_string(header.bit_depth) + ", not allowed with " +
           "color type " + std::to_string(header.color_type) + " (" + color + ")";
  }
  if (header.compression != 0 || header.filter != 0 || header.interlace > 1) {
    return "IHDR gives compression method " + std::to_string(header.compression) +
           ", filter method " + std::to_string(header.filter) + ", interlace method " +
           std::to_string(header.interlace) + " (PNG defines 0, 0 and 0 or 1)";
  }
  return std::nullopt;
}

Refusal checkPalette(std::string_view data, const Header& header) {
  if (header.color_type == 0 || header.color_type == 4) {
    return std::string("a PLTE chunk comes with color type ") + colorTypeName(header.color_type);
  }
  const std::size_t entries = data.size() / 3;
  const std::size_t most = header.color_type == 3 ? std::size_t{1} << header.bit_depth : 256;
  if (data.size() % 3 != 0 || entries == 0 || entries > most) {
    return "the PLTE chunk holds " + std::to_string(data.size()) + " bytes (3 per entry, 1 to " +
           std::to_string(most) + " entries)";
  }
  return std::nullopt;
}

// Walks the chunks after the signature: each one whole and with its CRC, in the order PNG
// requires, and nothing after IEND.
Refusal walkChunks(std::string_view bytes, const PngLimits& limits, Layout& layout) {
  std::size_t at = kSignature.size();
  bool idat_ended = false;  // a chunk other than IDAT came after IDAT
  for (std::size_t index = 1; at < bytes.size(); ++index) {
    std::string_view type;
    std::string_view data;
    if (auto refusal = readChunk(bytes, at, index, type, data)) return refusal;
    if (index == 1) {
      if (type != "IHDR") return "the first chunk is " + std::string(type) + ", not IHDR";
      if (auto refusal = checkHeader(data, limits, layout.header)) return refusal;
    } else if (type == "IHDR") {
      return chunkName(index, type) + " repeats the header";
    } else if (type == "PLTE") {
      if (layout.has_palette || !layout.image_data.empty()) {
        return chunkName(index, type) + " is a second palette or comes after the image data";
      }
      if (auto refusal = checkPalette(data, layout.header)) return refusal;
      layout.has_palette = true;
    } else if (type == "IDAT") {
      if (idat_ended) return chunkName(index, type) + " is apart from the IDAT chunks before it";
      if (layout.header.color_type == 3 && !layout.has_palette) {
        return "color type 3 (palette) needs a PLTE chunk before the image data";
      }
      layout.image_data.push_back(data);
    } else if (type == "IEND") {
      if (!data.empty()) return chunkName(index, type) + " is not empty";
      if (layout.image_data.empty()) return "there is no IDAT chunk (no image data)";
      if (at != bytes.size()) {
        return std::to_string(bytes.size() - at) + " bytes follow the IEND chunk";
      }
      return std::nullopt;
    } else if (type[0] >= 'A' && type[0] <= 'Z') {
      return chunkName(index, type) + " is critical but unknown to PNG decoders";
    }
    idat_ended = idat_ended || (!layout.image_data.empty() && type != "IDAT");
  }
  return std::string(layout.image_data.empty() ? "there is no IDAT chunk and " : "") +
         "the data ends without an IEND chunk";
}

// The rows of each Adam7 pass (x0, y0, dx, dy), or of the whole image; empty passes left out.
std::vector<Pass> passesOf(const Header& header) {
  static constexpr std::array<std::array<std::uint64_t, 4>, 7> kAdam7{{{0, 0, 8, 8},
                                                                       {4, 0, 8, 8},
                                                                       {0, 4, 4, 8},
                                                                       {2, 0, 4, 4},
                                                                       {0, 2, 2, 4},
                                                                       {1, 0, 2, 2},
                                                                       {0, 1, 1, 2}}};
  const std::uint64_t bits_per_pixel =
      std::uint64_t{channels(header.color_type)} * header.bit_depth;
  const auto pass = [&](std::uint64_t width, std::uint64_t rows) {
    return Pass{rows, 1 + (width * bits_per_pixel + 7) / 8};
  };
  if (header.interlace == 0) return {pass(header.width, header.height)};
  std::vector<Pass> passes;
  for (const auto& [x0, y0, dx, dy] : kAdam7) {
    if (header.width <= x0 || header.height <= y0) continue;
    passes.push_back(pass((header.width - x0 + dx - 1) / dx, (header.height - y0 + dy - 1) / dy));
  }
  return passes;
}

// What the image data must inflate to; past `cap`, any value above it (no overflow: a side
// is below 2^31 and a pixel at most 64 bits, so one stride fits; the rows are summed with care).
std::uint64_t decodedBytes(const std::vector<Pass>& passes, std::uint64_t cap) {
  std::uint64_t total = 0;
  for (const auto& pass : passes) {
    if (pass.rows > (cap - total) / pass.stride) return cap + 1;
    total += pass.rows * pass.stride;
  }
  return total;
}

// Checks each scanline's filter type byte as the inflated data streams past.
class ScanlineFilters {
 public:
  explicit ScanlineFilters(std::vector<Pass> passes) : passes_(std::move(passes)) {
    rows_left_ = passes_.empty() ? 0 : passes_[0].rows;
  }

  // `data` is the inflated stream from offset `at` on.
  Refusal check(const unsigned char* data, std::size_t size, std::uint64_t at) {
    while (pass_ < passes_.size() && next_ < at + size) {
      const unsigned filter = data[next_ - at];
      ++row_;
      if (filter > 4) {
        return "scanline " + std::to_string(row_) + " has filter type " + std::to_string(filter) +
               " (PNG defines 0 to 4)";
      }
      next_ += passes_[pass_].stride;
      if (--rows_left_ == 0 && ++pass_ < passes_.size()) rows_left_ = passes_[pass_].rows;
    }
    return std::nullopt;
  }

 private:
  std::vector<Pass> passes_;
  std::size_t pass_ = 0;
  std::uint64_t rows_left_ = 0;
  std::uint64_t next_ = 0;  // offset of the next filter type byte
  std::uint64_t row_ = 0;
};

class Inflater {
 public:
  Inflater() { ready_ = inflateInit(&stream_) == Z_OK; }
  ~Inflater() {
    if (ready_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  [[nodiscard]] bool ready() const noexcept { return ready_; }
  z_stream& stream() noexcept { return stream_; }

 private:
  z_stream stream_{};
  bool ready_ = false;
};

// Inflates the IDAT data, concatenated, to exactly `expected` bytes: never more than one byte past
// it (a decompression bomb stops there), and no compressed data after the zlib stream's end.
Refusal inflateImageData(const Layout& layout, std::uint64_t expected) {
  Inflater inflater;
  if (!inflater.ready()) return "the image data could not be checked (zlib did not start)";
  z_stream& stream = inflater.stream();
  ScanlineFilters filters(passesOf(layout.header));
  std::vector<unsigned char> out(std::min<std::uint64_t>(kInflateBufferBytes, expected + 1));
  std::uint64_t produced = 0;
  int status = Z_OK;
  for (const auto data : layout.image_data) {
    if (status == Z_STREAM_END) {
      if (data.empty()) continue;
      return "compressed data follows the end of the image data's zlib stream";
    }
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = static_cast<uInt>(data.size());
    while (stream.avail_in > 0 || stream.avail_out == 0) {
      const auto room =
          static_cast<uInt>(std::min<std::uint64_t>(out.size(), expected + 1 - produced));
      stream.next_out = out.data();
      stream.avail_out = room;
      status = inflate(&stream, Z_NO_FLUSH);
      const std::size_t got = room - stream.avail_out;
      if (auto refusal = filters.check(out.data(), got, produced)) return refusal;
      produced += got;
      if (produced > expected) {
        return "the image data inflates to more than the " + std::to_string(expected) +
               " bytes its IHDR implies (a decompression bomb)";
      }
      if (status == Z_STREAM_END) break;
      if (status == Z_BUF_ERROR && stream.avail_in == 0) break;  // needs the next chunk
      if (status == Z_NEED_DICT) return "the image data's zlib stream needs a preset dictionary";
      if (status != Z_OK) {
        return std::string("the image data is not a valid zlib stream (") +
               (stream.msg != nullptr ? stream.msg : "error " + std::to_string(status)) + ")";
      }
    }
    if (status == Z_STREAM_END && stream.avail_in > 0) {
      return "compressed data follows the end of the image data's zlib stream";
    }
  }
  if (status != Z_STREAM_END) {
    return "the image data is cut short: its zlib stream does not end (" +
           std::to_string(produced) + " of " + std::to_string(expected) + " bytes inflated)";
  }
  if (produced < expected) {
    return "the image data inflates to " + std::to_string(produced) + " bytes, less than the " +
           std::to_string(expected) + " its IHDR implies";
  }
  return std::nullopt;
}

Refusal check(std::string_view bytes, const PngLimits& limits, PngCheck& result) {
  if (bytes.substr(0, kSignature.size()) != kSignature) return "it has no PNG signature";
  Layout layout;
  if (auto refusal = walkChunks(bytes, limits, layout)) return refusal;
  result.width = layout.header.width;
  result.height = layout.header.height;
  const auto expected = decodedBytes(passesOf(layout.header), limits.max_decoded_bytes);
  if (expected > limits.max_decoded_bytes) {
    result.too_large = true;
    return "its " + std::to_string(result.width) + "x" + std::to_string(result.height) + " px at " +
           std::to_string(layout.header.bit_depth) + " bits per channel (" +
           colorTypeName(layout.header.color_type) + ") would decode to more than the " +
           std::to_string(limits.max_decoded_bytes) + " bytes allowed";
  }
  result.decoded_bytes = expected;
  return inflateImageData(layout, expected);
}

}  // namespace

PngCheck checkPng(std::string_view bytes, const PngLimits& limits) {
  PngCheck result;
  if (auto refusal = check(bytes, limits, result)) {
    result.reason = std::move(*refusal);
    return result;
  }
  result.valid = true;
  return result;
}

}  // namespace common
