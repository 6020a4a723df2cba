// The key that authenticates snapshot manifests (sandbox/snapshot_store.h): a file of 32 random
// bytes, mode 0600, made by the first server that needs it and shared by every server using the
// same snapshot root. Immutable once loaded; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace sandbox {

class SnapshotKey {
 public:
  static constexpr std::size_t kBytes = 32;

  // Reads `file`, creating it first when missing. Refuses (SandboxError saying what to fix) a
  // file that is a symbolic link or not a regular file, is owned by another user, can be read
  // or written by group or others, or does not hold exactly kBytes bytes.
  [[nodiscard]] static SnapshotKey loadOrCreate(const std::filesystem::path& file);

  // HMAC-SHA256 of `bytes`, lowercase hex.
  [[nodiscard]] std::string mac(std::string_view bytes) const;
  // Whether `mac_hex` is mac(bytes); compared in constant time.
  [[nodiscard]] bool verify(std::string_view bytes, std::string_view mac_hex) const;

 private:
  std::array<unsigned char, kBytes> key_{};
};

}  // namespace sandbox
