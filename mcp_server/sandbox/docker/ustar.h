// A minimal ustar (POSIX tar) writer for build contexts: regular files only, in memory.
// Pure, no I/O. Not thread-safe per instance.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sandbox::docker {

class UstarWriter {
 public:
  inline static constexpr std::size_t kBlockBytes = 512;
  inline static constexpr std::size_t kMaxNameBytes = 100;  // no prefix field support needed

  // Appends one regular file. Throws std::invalid_argument for an empty or too long name.
  void addFile(std::string_view name, std::string_view contents, std::uint32_t mode = 0644,
               std::int64_t mtime = 0);

  // Returns the archive, terminated by the two zero blocks tar requires. The writer is reset.
  [[nodiscard]] std::string finish();

 private:
  std::string archive_;
};

}  // namespace sandbox::docker
