#include "agent/file_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/unique_fd.h"

namespace agent::files {
namespace {

std::string hintFor(int error_number) {
  switch (error_number) {
    case ENOENT:
      return "create the directory first or check the path (list_files shows what exists)";
    case EACCES:
    case EPERM:
      return "the sandbox user may not access it; use a path under the working directory or /tmp";
    case EROFS:
      return "that filesystem is read-only; write under the working directory or /tmp";
    case ENOSPC:
    case EDQUOT:
      return "the filesystem is full; delete files or write less";
    case EISDIR:
      return "the path is a directory; name a file inside it";
    case ENOTDIR:
      return "a component of the path is a file, not a directory; check the path";
    case ENAMETOOLONG:
      return "use a shorter path";
    default:
      return "check the path and try again";
  }
}

[[noreturn]] void throwErrno(int error_number, const std::filesystem::path& path) {
  throw FileOpError(describeError(error_number, path));
}

void writeAll(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throwErrno(errno, path);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

protocol::FileType typeOf(mode_t mode) {
  if (S_ISREG(mode)) return protocol::FileType::kFile;
  if (S_ISDIR(mode)) return protocol::FileType::kDir;
  if (S_ISLNK(mode)) return protocol::FileType::kSymlink;
  return protocol::FileType::kOther;
}

// Removes the temporary file unless the rename succeeded.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::filesystem::path path) : path_(std::move(path)) {}
  ~TempFileGuard() {
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  void commit() noexcept { committed_ = true; }

 private:
  std::filesystem::path path_;
  bool committed_ = false;
};

}  // namespace

std::filesystem::path resolvePath(std::string_view path, const std::filesystem::path& cwd) {
  if (path.empty()) throw FileOpError("the path is empty; give a file path such as data.csv");
  if (path.find('\0') != std::string_view::npos) {
    throw FileOpError("the path contains a NUL byte; remove it");
  }
  std::filesystem::path p(path);
  if (p.is_relative()) p = cwd / p;
  p = p.lexically_normal();
  // "dir/" normalises to "dir/" (empty filename); drop the trailing separator for clean messages.
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

std::string describeError(int error_number, const std::filesystem::path& path) {
  return std::string(std::strerror(error_number)) + ": " + path.string() + " \u2014 " +
         hintFor(error_number);
}

std::uint64_t writeFile(const std::filesystem::path& path, std::string_view data, mode_t mode) {
  const std::filesystem::path parent = path.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) throwErrno(ec.value(), parent);

  static unsigned counter = 0;
  const std::filesystem::path temp =
      parent / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                std::to_string(counter++));
  common::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throwErrno(errno, path);
  TempFileGuard guard(temp);
  writeAll(fd.get(), data, path);
  if (::fchmod(fd.get(), mode) != 0) throwErrno(errno, path);  // exact mode, umask aside
  if (::close(fd.release()) != 0) throwErrno(errno, path);
  if (::rename(temp.c_str(), path.c_str()) != 0) throwErrno(errno, path);
  guard.commit();
  return data.size();
}

namespace {

// Opens `path` for reading and checks it is a regular file; returns the descriptor and its size.
common::UniqueFd openRegularFile(const std::filesystem::path& path, std::uint64_t& size) {
  // O_NONBLOCK: opening a FIFO must not hang the agent; it is refused below anyway.
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throwErrno(errno, path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throwErrno(errno, path);
  if (S_ISDIR(st.st_mode)) {
    throw FileOpError("Is a directory: " + path.string() +
                      " \u2014 use list_files to see inside it");
  }
  if (!S_ISREG(st.st_mode)) {
    throw FileOpError("Not a regular file: " + path.string() +
                      " \u2014 devices, sockets and pipes cannot be read; copy the data to a file");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// Reads up to `length` bytes at `offset`; fewer when the file ends (or shrank meanwhile).
std::string readAt(int fd, const std::filesystem::path& path, std::uint64_t offset,
                   std::size_t length) {
  std::string out;
  out.resize(length);
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throwErrno(errno, path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace

std::string readFile(const std::filesystem::path& path, std::uint64_t max_bytes) {
  std::uint64_t size = 0;
  const auto fd = openRegularFile(path, size);
  if (size > max_bytes) {
    throw FileOpError("File too large: " + path.string() + " is " + std::to_string(size) +
                      " bytes, above the limit of " + std::to_string(max_bytes) +
                      " bytes \u2014 read a part of it with a command (head -c, split) instead");
  }
  return readAt(fd.get(), path, 0, static_cast<std::size_t>(size));
}

FileRange readFileRange(const std::filesystem::path& path, std::uint64_t offset,
                        std::uint64_t length) {
  FileRange range;
  const auto fd = openRegularFile(path, range.file_size);
  if (offset > range.file_size) {
    throw FileOpError("Offset past the end: " + path.string() + " is " +
                      std::to_string(range.file_size) + " bytes, the range starts at " +
                      std::to_string(offset) + " \u2014 start at an offset below the size");
  }
  const std::uint64_t count = std::min({length, range.file_size - offset, kMaxTransferBytes});
  range.data = readAt(fd.get(), path, offset, static_cast<std::size_t>(count));
  return range;
}

protocol::FileListing listDirectory(const std::filesystem::path& path) {
  const int dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) throwErrno(errno, path);
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(dir_fd);
    throwErrno(err, path);
  }
  protocol::FileListing listing;
  listing.path = path.string();
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    if (listing.entries.size() >= protocol::FileListing::kMaxListEntries) {
      listing.truncated = true;
      break;
    }
    protocol::FileEntry out{std::string(name), protocol::FileType::kOther, 0, 0};
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      out.type = typeOf(st.st_mode);
      out.size = static_cast<std::uint64_t>(st.st_size);
      out.mtime = st.st_mtim.tv_sec;
    }
    listing.entries.push_back(std::move(out));
  }
  ::closedir(dir);
  std::sort(listing.entries.begin(), listing.entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return listing;
}

mode_t parseMode(std::int64_t value) {
  if (value < 0 || value > 07777) {
    throw FileOpError("mode " + std::to_string(value) +
                      " is out of range; give permission bits such as 420 (0644) or \"0755\"");
  }
  return static_cast<mode_t>(value);
}

mode_t parseMode(std::string_view octal) {
  if (octal.empty() || octal.size() > 5 ||
      !std::all_of(octal.begin(), octal.end(), [](char c) { return c >= '0' && c <= '7'; })) {
    throw FileOpError("mode \"" + std::string(octal) +
                      "\" is not an octal permission string; use something like \"0644\"");
  }
  return parseMode(std::stoll(std::string(octal), nullptr, 8));
}

}  // namespace agent::files
