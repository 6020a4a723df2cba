#include "sandbox/docker/tar_writer.h"

#include <array>
#include <cstring>
#include <string_view>

#include "sandbox/backend.h"

namespace sandbox::docker {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kNameBytes = 100;
constexpr std::size_t kPrefixBytes = 155;
constexpr std::uint64_t kMaxFileBytes = 077777777777ULL;  // 11 octal digits
constexpr std::uint64_t kMtime = 1700000000;              // 2023-11-14: fixed, reproducible

// Field offsets and sizes of the ustar header (POSIX.1-1988).
struct Field {
  std::size_t offset;
  std::size_t size;
};
constexpr Field kName{0, 100};
constexpr Field kMode{100, 8};
constexpr Field kUid{108, 8};
constexpr Field kGid{116, 8};
constexpr Field kSize{124, 12};
constexpr Field kMtimeField{136, 12};
constexpr Field kChecksum{148, 8};
constexpr Field kType{156, 1};
constexpr Field kMagic{257, 6};
constexpr Field kVersion{263, 2};
constexpr Field kUname{265, 32};
constexpr Field kGname{297, 32};
constexpr Field kPrefix{345, 155};

using Header = std::array<char, kBlock>;

void put(Header& header, Field field, std::string_view text) {
  std::memcpy(header.data() + field.offset, text.data(), std::min(text.size(), field.size));
}

// Zero-padded octal in size-1 digits and a terminating NUL.
void putOctal(Header& header, Field field, std::uint64_t value) {
  std::string digits(field.size - 1, '0');
  for (auto it = digits.rbegin(); it != digits.rend() && value != 0; ++it, value >>= 3U) {
    *it = static_cast<char>('0' + (value & 7U));
  }
  put(header, field, digits);
}

void checkPath(const std::string& path) {
  const bool bad = path.empty() || path.front() == '/' || path.find('\0') != std::string::npos ||
                   path == ".." || path.rfind("../", 0) == 0 ||
                   path.find("/../") != std::string::npos ||
                   (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
  if (bad) throw SandboxError("tar: '" + path + "' is not a relative path inside the archive");
}

// Splits a long path at a '/' into ustar's prefix and name fields.
std::pair<std::string, std::string> splitPath(const std::string& path) {
  if (path.size() <= kNameBytes) return {"", path};
  for (std::size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (slash <= kPrefixBytes && path.size() - slash - 1 <= kNameBytes && slash + 1 < path.size()) {
      return {path.substr(0, slash), path.substr(slash + 1)};
    }
  }
  throw SandboxError("tar: '" + path + "' is too long for a ustar header");
}

Header header(const TarEntry& entry) {
  checkPath(entry.path);
  std::string path = entry.path;
  if (entry.directory && path.back() != '/') path.push_back('/');
  const auto [prefix, name] = splitPath(path);
  const std::uint64_t size = entry.directory ? 0 : entry.content.size();
  if (size > kMaxFileBytes) throw SandboxError("tar: '" + entry.path + "' is too large");

  Header out{};
  put(out, kName, name);
  putOctal(out, kMode, entry.mode & 07777U);
  putOctal(out, kUid, 0);
  putOctal(out, kGid, 0);
  putOctal(out, kSize, size);
  putOctal(out, kMtimeField, kMtime);
  put(out, kType, entry.directory ? "5" : "0");
  put(out, kMagic, std::string_view("ustar\0", 6));
  put(out, kVersion, "00");
  put(out, kUname, "root");
  put(out, kGname, "root");
  put(out, kPrefix, prefix);
  // The checksum counts its own field as eight spaces; stored as six digits, NUL, space.
  std::memset(out.data() + kChecksum.offset, ' ', kChecksum.size);
  unsigned sum = 0;
  for (const char c : out) sum += static_cast<unsigned char>(c);
  putOctal(out, Field{kChecksum.offset, 7}, sum);
  out[kChecksum.offset + 6] = '\0';
  out[kChecksum.offset + 7] = ' ';
  return out;
}

}  // namespace

std::string ustarArchive(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const auto& entry : entries) {
    const Header block = header(entry);
    out.append(block.data(), block.size());
    if (entry.directory) continue;
    out.append(entry.content);
    out.append((kBlock - entry.content.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');  // end of archive
  return out;
}

}  // namespace sandbox::docker
