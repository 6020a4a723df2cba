#include "sandbox/file_digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>

#include "common/fd_io.h"
#include "common/hex.h"
#include "sandbox/backend.h"

namespace sandbox {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20U;
constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max() - 1;

struct FreeDigestContext {
  void operator()(EVP_MD_CTX* context) const noexcept { EVP_MD_CTX_free(context); }
};

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      throw SandboxError("cannot start a SHA-256 digest (OpenSSL EVP_DigestInit_ex failed)");
    }
  }

  void update(const char* data, std::size_t size) {
    if (EVP_DigestUpdate(context_.get(), data, size) != 1) {
      throw SandboxError("SHA-256 failed (OpenSSL EVP_DigestUpdate)");
    }
  }

  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1) {
      throw SandboxError("SHA-256 failed (OpenSSL EVP_DigestFinal_ex)");
    }
    return common::hexEncode(digest.data(), length);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, FreeDigestContext> context_;
};

ssize_t readSome(int fd, char* buffer, std::size_t size) noexcept {
  for (;;) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

// The one loop behind both calls; `to` < 0: hash only.
FileDigest stream(int from, int to, std::uint64_t max_bytes, const std::string& what) {
  ::posix_fadvise(from, 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint: larger read-ahead
  const auto buffer = std::make_unique_for_overwrite<char[]>(kBufferBytes);
  Sha256 sha;
  FileDigest digest;
  while (digest.size <= max_bytes) {
    const auto wanted = static_cast<std::size_t>(
        std::min<std::uint64_t>(kBufferBytes, max_bytes + 1 - digest.size));
    const ssize_t n = readSome(from, buffer.get(), wanted);
    if (n < 0) throw SandboxError("cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    const auto got = static_cast<std::size_t>(n);
    sha.update(buffer.get(), got);
    if (to >= 0 && !common::writeAll(to, std::string_view(buffer.get(), got))) {
      throw SandboxError("cannot write the copy of " + what + ": " + std::strerror(errno));
    }
    digest.size += got;
  }
  digest.sha256 = sha.hex();
  return digest;
}

}  // namespace

FileDigest digestFile(int fd, const std::string& what) { return stream(fd, -1, kNoLimit, what); }

FileDigest copyWithDigest(int from, int to, std::uint64_t max_bytes, const std::string& what) {
  return stream(from, to, std::min(max_bytes, kNoLimit), what);
}

}  // namespace sandbox
