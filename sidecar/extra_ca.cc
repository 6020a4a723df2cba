#include "sidecar/extra_ca.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <cstdio>
#include <stdexcept>

namespace sidecar {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

}  // namespace

std::shared_ptr<const ExtraCaCertificates> ExtraCaCertificates::load(const std::string& path) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) throw std::runtime_error("cannot read the upstream CA file " + path);
  auto loaded = std::make_shared<ExtraCaCertificates>();
  while (X509* certificate = PEM_read_X509(file.get(), nullptr, nullptr, nullptr)) {
    loaded->certificates_.emplace_back(certificate);
  }
  ERR_clear_error();  // the end of the file reads as an error
  if (loaded->certificates_.empty()) {
    throw std::runtime_error("the upstream CA file " + path + " holds no PEM certificate");
  }
  return loaded;
}

void ExtraCaCertificates::addTo(X509_STORE* store) const {
  for (const auto& certificate : certificates_) X509_STORE_add_cert(store, certificate.get());
  ERR_clear_error();  // "already in the store" is not a failure here
}

}  // namespace sidecar
