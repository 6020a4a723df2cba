#include "agent/output_spill.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace agent {
namespace {

// mkdir -p that never follows a symlink: each component is opened with O_NOFOLLOW relative to
// its parent. Code in the sandbox runs as the same uid and may have planted links; it can only
// redirect its own output, but the agent still writes where it means to. Returns -1 with errno.
int openDirectoryNoFollow(const std::filesystem::path& dir) {
  common::UniqueFd current(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const auto& part : dir.relative_path()) {
    if (!current) return -1;
    const std::string name = part.string();
    if (::mkdirat(current.get(), name.c_str(), 0700) != 0 && errno != EEXIST) return -1;
    current.reset(
        ::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return current ? current.release() : -1;
}

}  // namespace

OutputSpill::OutputSpill(std::filesystem::path dir, std::string file_name, std::uint64_t max_bytes)
    : dir_(std::move(dir)), file_name_(std::move(file_name)), max_bytes_(max_bytes) {}

void OutputSpill::open() {
  started_ = true;
  const common::UniqueFd dir(openDirectoryNoFollow(dir_));
  if (!dir) return fail("cannot create " + dir_.string(), errno);
  (void)::unlinkat(dir.get(), file_name_.c_str(), 0);  // a leftover of an earlier agent
  fd_.reset(::openat(dir.get(), file_name_.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd_) fail("cannot create " + path().string(), errno);
}

void OutputSpill::write(std::string_view bytes) {
  if (!started_) open();
  if (!fd_ || bytes.empty()) return;
  if (written_ + bytes.size() > max_bytes_) {
    bytes = bytes.substr(0, max_bytes_ - written_);
    complete_ = false;
  }
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write " + path().string(), errno);
    }
    written_ += static_cast<std::uint64_t>(n);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (!complete_) fd_.reset();  // full: nothing more will be written
}

void OutputSpill::fail(const std::string& what, int err) {
  complete_ = false;
  fd_.reset();
  if (error_.empty()) error_ = what + ": " + std::strerror(err);
}

}  // namespace agent
