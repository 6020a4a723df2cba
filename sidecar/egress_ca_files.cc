#include "sidecar/egress_ca_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sidecar {
namespace {

constexpr mode_t kWorldReadable = 0644;

std::runtime_error writeError(const std::string& path, int error) {
  return std::runtime_error(
      "cannot write " + path + " (the session CA for the sandbox): " + std::strerror(error) +
      "; check that the egress socket's directory " + "is writable by the sidecar");
}

bool writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// `text` into `path`, replacing it atomically: readers see the old file or the whole new one.
void writeAtomically(const std::string& path, const std::string& text) {
  std::string temp = path + ".XXXXXX";
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) throw writeError(path, errno);
  const bool written = ::fchmod(fd, kWorldReadable) == 0 && writeAll(fd, text) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int failure = written ? errno : error;
    ::unlink(temp.c_str());
    throw writeError(path, failure);
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string findSystemCaBundle() {
  for (const char* path :
       {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
    if (::access(path, R_OK) == 0) return path;
  }
  return "";
}

std::vector<std::string> writeEgressCaFiles(const std::string& dir, const std::string& ca_cert_pem,
                                            const std::string& system_bundle) {
  const std::string ca_path = dir + "/" + kEgressCaFileName;
  const std::string bundle_path = dir + "/" + kCaBundleFileName;
  std::string bundle = system_bundle.empty() ? std::string() : readFile(system_bundle);
  if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
  bundle += ca_cert_pem;
  writeAtomically(ca_path, ca_cert_pem);
  try {
    writeAtomically(bundle_path, bundle);
  } catch (...) {
    ::unlink(ca_path.c_str());
    throw;
  }
  return {ca_path, bundle_path};
}

void removeEgressCaFiles(const std::vector<std::string>& paths) noexcept {
  for (const auto& path : paths) ::unlink(path.c_str());
}

}  // namespace sidecar
