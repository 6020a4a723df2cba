// SHA-256 of a file's bytes as they stream through one 1 MiB buffer, each byte read once: for
// sealing a checkpoint image and for copying one while checking it (sandbox/snapshot_store.h).
// OpenSSL's SHA-256 uses the CPU's SHA extensions where present (~1.5 GB/s), so hashing costs
// about what reading does. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

namespace sandbox {

struct FileDigest {
  std::uint64_t size = 0;
  std::string sha256;  // lowercase hex
};

// Reads `fd` to its end. Throws SandboxError naming `what` when a read fails.
[[nodiscard]] FileDigest digestFile(int fd, const std::string& what);

// Reads `from` and writes each chunk to `to` once it is hashed, so `to` receives exactly the bytes
// the digest covers. Stops after max_bytes + 1 bytes: a size above max_bytes says the source is
// longer than expected (and the digest covers only what was read). Throws SandboxError naming
// `what` when a read or write fails.
[[nodiscard]] FileDigest copyWithDigest(int from, int to, std::uint64_t max_bytes,
                                        const std::string& what);

}  // namespace sandbox
