#include "app/ca_file_check.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

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
  const std::string fix = ": fix the file or unset " + setting;
  std::error_code ec;
  // A directory opens too, and a FIFO would hang the start: only a regular file is read.
  if (!std::filesystem::is_regular_file(path, ec)) {
    check.detail = path + (ec ? " cannot be read (" + ec.message() + ")" : " is not a file") + fix;
    return check;
  }
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    const int error = errno;
    check.detail = path + " cannot be read (" + std::generic_category().message(error) + ")" + fix;
    return check;
  }
  ERR_clear_error();
  int certificates = 0;
  while (std::unique_ptr<X509, CertificateFree> certificate{
      PEM_read_X509(file.get(), nullptr, nullptr, nullptr)}) {
    ++certificates;
  }
  // The loop ends at the end of the file ("no start line"), or at a block that is not a whole
  // certificate: the egress proxy refuses such a file entirely, so the check does too.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end = last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM &&
                                       ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  std::array<char, 256> reason{};
  if (!clean_end) ERR_error_string_n(last, reason.data(), reason.size());
  ERR_clear_error();
  if (!clean_end) {
    check.detail = path + " holds a block that is not a whole PEM certificate after " +
                   std::to_string(certificates) + " good one(s) (" + reason.data() + ")" + fix;
  } else if (certificates == 0) {
    check.detail = path + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)" + fix;
  } else {
    check.ok = true;
    check.detail = path + ": " + std::to_string(certificates) + " certificate" +
                   (certificates == 1 ? "" : "s");
  }
  return check;
}

}  // namespace app
