// Extra CA certificates an operator trusts for the MCP relay's https upstreams (an internal CA),
// added to the system store libcurl loads: each new TLS connection's certificate store gets them
// through CURLOPT_SSL_CTX_FUNCTION (libcurl built with OpenSSL), so the system's CAs stay.
// Thread-safety: immutable after load; share as std::shared_ptr<const ExtraCaCertificates>.
#pragma once

#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

namespace sidecar {

class ExtraCaCertificates {
 public:
  // Reads every certificate of a PEM file. Throws std::runtime_error naming the file when it
  // cannot be read or holds no certificate.
  [[nodiscard]] static std::shared_ptr<const ExtraCaCertificates> load(const std::string& path);

  // Adds them to `store` (a certificate already there is fine).
  void addTo(X509_STORE* store) const;
  [[nodiscard]] std::size_t size() const noexcept { return certificates_.size(); }

 private:
  struct X509Deleter {
    void operator()(X509* certificate) const noexcept { X509_free(certificate); }
  };
  std::vector<std::unique_ptr<X509, X509Deleter>> certificates_;
};

}  // namespace sidecar
