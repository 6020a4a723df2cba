#include "sandbox/snapshot_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/fd_io.h"
#include "common/hex.h"
#include "common/random_id.h"
#include "common/unique_fd.h"
#include "sandbox/backend.h"

namespace sandbox {
namespace {

namespace fs = std::filesystem;

constexpr int kOpenFlags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;  // NONBLOCK: a FIFO

std::string removalHint(const fs::path& file) {
  return " Remove it (rm " + file.string() +
         ") to have a new key made at the next start; snapshots sealed with the old key can then "
         "no longer be restored.";
}

// Written under a temporary name and linked into place: link() fails when the key exists, so of
// two servers starting at once exactly one key wins, and nobody ever reads a half-written one.
void createKeyFile(const fs::path& file) {
  const fs::path temp =
      file.parent_path() / (file.filename().string() + ".new-" + common::randomHex(8));
  std::string key(SnapshotKey::kBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    throw SandboxError("cannot make the snapshot key: OpenSSL RAND_bytes failed");
  }
  common::UniqueFd fd(
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    throw SandboxError("cannot create " + temp.string() + ": " + std::strerror(errno) +
                       "; the snapshot directory must be writable by the server");
  }
  const bool written = common::writeAll(fd.get(), key) && ::fsync(fd.get()) == 0;
  const int write_errno = errno;
  fd.reset();
  const bool linked = written && (::link(temp.c_str(), file.c_str()) == 0 || errno == EEXIST);
  const int link_errno = errno;
  ::unlink(temp.c_str());
  if (!written || !linked) {
    throw SandboxError("cannot create the snapshot key " + file.string() + ": " +
                       std::strerror(written ? link_errno : write_errno));
  }
}

common::UniqueFd openKeyFile(const fs::path& file) {
  common::UniqueFd fd(::open(file.c_str(), kOpenFlags));
  if (!fd && errno == ENOENT) {
    createKeyFile(file);
    fd.reset(::open(file.c_str(), kOpenFlags));
  }
  if (!fd) {
    const bool link = errno == ELOOP;
    throw SandboxError("cannot open the snapshot key " + file.string() + ": " +
                       (link ? std::string("it is a symbolic link.") + removalHint(file)
                             : std::string(std::strerror(errno))));
  }
  return fd;
}

void requirePrivateKeyFile(int fd, const fs::path& file) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    throw SandboxError("cannot stat the snapshot key " + file.string() + ": " +
                       std::strerror(errno));
  }
  const std::string refusing = "refusing the snapshot key " + file.string() + ": ";
  if (!S_ISREG(info.st_mode)) {
    throw SandboxError(refusing + "it is not a regular file." + removalHint(file));
  }
  if (info.st_uid != ::geteuid()) {
    throw SandboxError(refusing + "it is owned by uid " + std::to_string(info.st_uid) +
                       ", not by this server's uid " + std::to_string(::geteuid()) +
                       ", who could forge snapshots." + removalHint(file));
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw SandboxError(refusing + "its mode " + mode +
                       " lets other users read or change it, and with it forge snapshots. Run "
                       "chmod 600 " +
                       file.string() + " if nobody else could have read it;" + removalHint(file));
  }
  if (info.st_size != static_cast<off_t>(SnapshotKey::kBytes)) {
    throw SandboxError(refusing + "it holds " + std::to_string(info.st_size) + " bytes, not " +
                       std::to_string(SnapshotKey::kBytes) + "." + removalHint(file));
  }
}

}  // namespace

SnapshotKey SnapshotKey::loadOrCreate(const fs::path& file) {
  const common::UniqueFd fd = openKeyFile(file);
  requirePrivateKeyFile(fd.get(), file);
  SnapshotKey key;
  std::size_t filled = 0;
  while (filled < kBytes) {
    const ssize_t n = ::read(fd.get(), key.key_.data() + filled, kBytes - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw SandboxError("cannot read the snapshot key " + file.string() + ": " +
                         (n < 0 ? std::strerror(errno) : "it is shorter than it was"));
    }
    filled += static_cast<std::size_t>(n);
  }
  return key;
}

std::string SnapshotKey::mac(std::string_view bytes) const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
           reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data(),
           &length) == nullptr) {
    throw SandboxError("HMAC-SHA256 failed (OpenSSL HMAC)");
  }
  return common::hexEncode(digest.data(), length);
}

bool SnapshotKey::verify(std::string_view bytes, std::string_view mac_hex) const {
  const std::string expected = mac(bytes);
  return mac_hex.size() == expected.size() &&
         CRYPTO_memcmp(mac_hex.data(), expected.data(), expected.size()) == 0;
}

}  // namespace sandbox
