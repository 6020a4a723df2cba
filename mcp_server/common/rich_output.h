// What a Python cell shows besides text: images (matplotlib figures, display(), objects with
// _repr_png_) and the summary of a pandas table returned as the cell's value. The Python driver
// reports them, the agent passes them on in its exec reply, the server turns them into MCP image
// content and structured fields. Every producer is sandbox code (user code can write the driver's
// reply pipe), so the parser trusts no field: counts, sizes and strings are capped, an inline image
// must be base64 of a real PNG, and its size is read from the PNG itself, not from a claim.
// Pure, header-only; shared by the server and the agent.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base64.h"
#include "common/utf8.h"

namespace common {

// What one execution may send back inline (config `images`).
struct ImageLimits {
  std::size_t max_count = 8;                         // images per execution
  std::size_t max_bytes = std::size_t{1024} * 1024;  // PNG bytes of one inline image
  std::int64_t max_px = 1568;                        // longest side of an inline image
  bool operator==(const ImageLimits&) const = default;
};
inline constexpr std::size_t kMaxImagesLimit = 32;
inline constexpr std::size_t kMaxImageBytesLimit = std::size_t{4} * 1024 * 1024;
inline constexpr std::int64_t kMinImagePx = 64;
inline constexpr std::int64_t kMaxImagePx = 8192;
// PNG bytes sent inline per execution, all images together, so that a reply with its images
// always fits a frame (64 MiB) beside the capped output; images past it are not sent.
inline constexpr std::size_t kMaxInlineImageBytesTotal = std::size_t{8} * 1024 * 1024;

struct Image {
  std::string path;        // the full-size file in the sandbox; empty when none was kept
  std::int64_t width = 0;  // of the full-size file, as the driver reported it
  std::int64_t height = 0;
  std::uint64_t bytes = 0;
  std::string data_b64;         // the inline PNG, within the limits
  std::int64_t data_width = 0;  // read from the inline PNG's header
  std::int64_t data_height = 0;
  std::size_t data_bytes = 0;
};

// A pandas DataFrame or Series returned as a cell's value; `result` holds its text rendering.
struct TableSummary {
  std::string kind;  // DataFrame | Series
  std::vector<std::int64_t> shape;
  std::vector<std::pair<std::string, std::string>> dtypes;  // column name, dtype
  bool dtypes_cut = false;                                  // more columns than kMaxTableColumns
};
inline constexpr std::size_t kMaxTableColumns = 200;
// Entries of `images` looked at, and refusals reported, per reply: a reply may hold millions.
inline constexpr std::size_t kMaxImageEntries = 2 * kMaxImagesLimit;
inline constexpr std::size_t kMaxDroppedNotes = 8;

struct RichOutput {
  std::vector<Image> images;
  std::optional<TableSummary> table;
  std::vector<std::string> dropped;  // why an image was refused, one line each
};

namespace rich_output_detail {

inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxNameBytes = 256;

inline std::uint32_t bigEndian32(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    value = (value << 8U) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

// At most `cap` bytes of a string, never ending inside a UTF-8 character; "" for a non-string.
inline std::string shortString(const nlohmann::json& value, std::size_t cap) {
  if (!value.is_string()) return {};
  const std::string_view text = value.get_ref<const std::string&>();
  if (text.size() <= cap) return std::string(text);
  return std::string(text.substr(0, completeUtf8PrefixLength(text.substr(0, cap))));
}

inline std::int64_t nonNegative(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  return std::max<std::int64_t>(0, it->get<std::int64_t>());
}

}  // namespace rich_output_detail

// Width and height from a PNG's IHDR chunk; nullopt when `bytes` is not a PNG.
[[nodiscard]] inline std::optional<std::pair<std::int64_t, std::int64_t>> pngSize(
    std::string_view bytes) {
  constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (bytes.size() < 24 || bytes.substr(0, 8) != kSignature || bytes.substr(12, 4) != "IHDR") {
    return std::nullopt;
  }
  const std::int64_t width = rich_output_detail::bigEndian32(bytes, 16);
  const std::int64_t height = rich_output_detail::bigEndian32(bytes, 20);
  if (width == 0 || height == 0) return std::nullopt;
  return std::make_pair(width, height);
}

// Reads `images` and `table` from a reply (the driver's or the agent's), keeping what is within
// `limits` and saying in `dropped` what was not.
[[nodiscard]] inline RichOutput parseRichOutput(const nlohmann::json& reply,
                                                const ImageLimits& limits) {
  using rich_output_detail::nonNegative;
  using rich_output_detail::shortString;
  RichOutput out;
  const auto images = reply.find("images");
  if (images != reply.end() && images->is_array()) {
    std::size_t index = 0;
    std::size_t refused = 0;
    std::size_t inline_bytes = 0;
    const auto refuse = [&](std::string why) {
      if (++refused <= kMaxDroppedNotes) out.dropped.push_back(std::move(why));
    };
    for (const auto& entry : *images) {
      ++index;
      if (out.images.size() >= limits.max_count) {
        refuse("images past the limit of " + std::to_string(limits.max_count) +
               " per execution were not sent (images.max_per_call)");
        break;
      }
      if (index > kMaxImageEntries) {
        refuse("entries past the first " + std::to_string(kMaxImageEntries) + " were ignored");
        break;
      }
      if (!entry.is_object()) continue;
      const auto data = entry.find("data_b64");
      if (data == entry.end() || !data->is_string()) {
        refuse("image " + std::to_string(index) + " has no PNG data");
        continue;
      }
      // Checked on the text first, so that nothing larger is ever decoded (base64: 4 per 3).
      const auto png = data->get_ref<const std::string&>().size() <= limits.max_bytes / 3 * 4 + 8
                           ? base64Decode(data->get_ref<const std::string&>())
                           : std::nullopt;
      if (!png || png->size() > limits.max_bytes) {
        refuse("image " + std::to_string(index) + " is larger than " +
               std::to_string(limits.max_bytes) + " bytes (images.max_bytes) or not base64");
        continue;
      }
      if (inline_bytes + png->size() > kMaxInlineImageBytesTotal) {
        refuse("image " + std::to_string(index) + " was not sent: the images of one execution " +
               "may hold " + std::to_string(kMaxInlineImageBytesTotal) + " bytes in all");
        continue;
      }
      const auto size = pngSize(*png);
      if (!size) {
        refuse("image " + std::to_string(index) + " is not a PNG");
        continue;
      }
      if (size->first > limits.max_px || size->second > limits.max_px) {
        refuse("image " + std::to_string(index) + " is larger than " +
               std::to_string(limits.max_px) + " px (images.max_px)");
        continue;
      }
      inline_bytes += png->size();
      Image image;
      image.data_b64 = base64Encode(*png);  // canonical: what is sent on is what was checked
      image.data_width = size->first;
      image.data_height = size->second;
      image.data_bytes = png->size();
      if (const auto path = entry.find("path"); path != entry.end()) {
        image.path = shortString(*path, rich_output_detail::kMaxPathBytes);
        if (image.path.size() == rich_output_detail::kMaxPathBytes || image.path.empty() ||
            image.path.front() != '/') {
          image.path.clear();
        }
      }
      image.width = image.path.empty() ? image.data_width : nonNegative(entry, "width");
      image.height = image.path.empty() ? image.data_height : nonNegative(entry, "height");
      image.bytes = image.path.empty() ? image.data_bytes
                                       : static_cast<std::uint64_t>(nonNegative(entry, "bytes"));
      out.images.push_back(std::move(image));
    }
    if (refused > kMaxDroppedNotes) {
      out.dropped.push_back(std::to_string(refused - kMaxDroppedNotes) +
                            " more image(s) were refused");
    }
  }
  const auto table = reply.find("table");
  if (table != reply.end() && table->is_object()) {
    TableSummary summary;
    summary.kind = shortString(table->value("kind", nlohmann::json()), 32);
    if (summary.kind != "DataFrame" && summary.kind != "Series") return out;
    const auto shape = table->find("shape");
    if (shape != table->end() && shape->is_array() && shape->size() <= 2) {
      for (const auto& n : *shape) {
        summary.shape.push_back(
            n.is_number_integer() ? std::max<std::int64_t>(0, n.get<std::int64_t>()) : 0);
      }
    }
    const auto dtypes = table->find("dtypes");
    if (dtypes != table->end() && dtypes->is_array()) {
      for (const auto& pair : *dtypes) {
        if (summary.dtypes.size() >= kMaxTableColumns) {
          summary.dtypes_cut = true;
          break;
        }
        if (!pair.is_array() || pair.size() != 2) continue;
        summary.dtypes.emplace_back(shortString(pair[0], rich_output_detail::kMaxNameBytes),
                                    shortString(pair[1], rich_output_detail::kMaxNameBytes));
      }
    }
    const auto cut = table->find("dtypes_cut");
    summary.dtypes_cut = summary.dtypes_cut || (cut != table->end() && *cut == true);
    out.table = std::move(summary);
  }
  return out;
}

// Writes `rich` into a reply in the form parseRichOutput reads.
inline void writeRichOutput(nlohmann::json& reply, const RichOutput& rich) {
  if (!rich.images.empty()) {
    auto& images = reply["images"];
    images = nlohmann::json::array();
    for (const auto& image : rich.images) {
      nlohmann::json entry = {{"width", image.width},
                              {"height", image.height},
                              {"bytes", image.bytes},
                              {"data_b64", image.data_b64}};
      if (!image.path.empty()) entry["path"] = image.path;
      images.push_back(std::move(entry));
    }
  }
  if (rich.table) {
    nlohmann::json dtypes = nlohmann::json::array();
    for (const auto& [name, dtype] : rich.table->dtypes) dtypes.push_back({name, dtype});
    reply["table"] = {{"kind", rich.table->kind},
                      {"shape", rich.table->shape},
                      {"dtypes", std::move(dtypes)},
                      {"dtypes_cut", rich.table->dtypes_cut}};
  }
}

}  // namespace common
