// A minimal POSIX ustar writer for the archives sent to PUT /containers/{id}/archive: regular
// files and directories only, owned by 0:0, a fixed modification time (the same input gives the
// same bytes). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandbox::docker {

struct TarEntry {
  std::string path;     // relative, '/'-separated, no "..", no leading '/'
  std::string content;  // ignored for directories
  std::uint32_t mode = 0644;
  bool directory = false;
};

// Throws SandboxError when a path cannot be stored (empty, absolute, "..", NUL, longer than
// ustar's 100-byte name plus 155-byte prefix) or a file is 8 GiB or more.
[[nodiscard]] std::string ustarArchive(const std::vector<TarEntry>& entries);

}  // namespace sandbox::docker
