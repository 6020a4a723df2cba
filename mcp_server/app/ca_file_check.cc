#include "app/ca_file_check.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace app {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

struct CertificateFree {
  void operator()(X509* certificate) const noexcept { X509_free(certificate); }
};

}  // namespace

sandbox::HealthCheck caFileCheck(const std::string& setting, const std::string& path) {
  sandbox::HealthCheck check{setting, false, ""};
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    check.detail = "cannot read " + path + " (" + std::strerror(errno) +
                   "): sessions that need it fail to start; fix the file or unset " + setting;
    return check;
  }
  int certificates = 0;
  while (std::unique_ptr<X509, CertificateFree> certificate{
      PEM_read_X509(file.get(), nullptr, nullptr, nullptr)}) {
    ++certificates;
  }
  ERR_clear_error();  // the end of the file reads as an error
  if (certificates == 0) {
    check.detail = path +
                   " holds no PEM certificate (-----BEGIN CERTIFICATE-----): sessions "
                   "that need it fail to start; fix the file or unset " +
                   setting;
    return check;
  }
  check.ok = true;
  check.detail =
      path + ": " + std::to_string(certificates) + " certificate" + (certificates == 1 ? "" : "s");
  return check;
}

}  // namespace app
