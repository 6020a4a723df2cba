#include "sandbox/docker/ustar.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace sandbox::docker {
namespace {

// Writes `value` as a zero-padded octal number of width-1 digits followed by a NUL.
void putOctal(char* field, std::size_t width, std::uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
}

void putString(char* field, std::string_view text) { std::copy(text.begin(), text.end(), field); }

}  // namespace

void UstarWriter::addFile(std::string_view name, std::string_view contents, std::uint32_t mode,
                          std::int64_t mtime) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    throw std::invalid_argument("tar entry name must be 1.." + std::to_string(kMaxNameBytes) +
                                " bytes, got " + std::to_string(name.size()));
  }
  char header[kBlockBytes] = {};
  putString(header + 0, name);                  // name[100]
  putOctal(header + 100, 8, mode & 07777U);     // mode[8]
  putOctal(header + 108, 8, 0);                 // uid[8]
  putOctal(header + 116, 8, 0);                 // gid[8]
  putOctal(header + 124, 12, contents.size());  // size[12]
  putOctal(header + 136, 12, static_cast<std::uint64_t>(std::max<std::int64_t>(mtime, 0)));
  header[156] = '0';                                        // typeflag: regular file
  putString(header + 257, std::string_view("ustar\0", 6));  // magic[6]
  putString(header + 263, "00");                            // version[2]
  // The checksum is computed with its own field read as eight spaces.
  std::fill_n(header + 148, 8, ' ');
  unsigned sum = 0;
  for (const char c : header) sum += static_cast<unsigned char>(c);
  std::snprintf(header + 148, 8, "%06o", sum);  // six digits, NUL, then the space kept below
  header[155] = ' ';

  archive_.append(header, kBlockBytes);
  archive_.append(contents);
  const std::size_t pad = (kBlockBytes - contents.size() % kBlockBytes) % kBlockBytes;
  archive_.append(pad, '\0');
}

std::string UstarWriter::finish() {
  archive_.append(2 * kBlockBytes, '\0');
  std::string out;
  out.swap(archive_);
  return out;
}

}  // namespace sandbox::docker
