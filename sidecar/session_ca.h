// A session's certificate authority for the egress proxy's TLS interception (tls_intercept.h):
// for the hosts whose requests get secret headers, the sidecar ends the sandbox's TLS itself,
// with a leaf certificate for the CONNECT host signed by this CA (whose certificate the egress
// proxy writes for the sandbox's trust store, egress_ca_files.h; the sandbox never sees the key).
//  - generateCa: what the egress proxy calls at start to make the CA in memory. With
//    `permitted_hosts` the CA carries a critical nameConstraints extension (RFC 5280 4.2.1.10):
//    DNS subtrees (or single IP addresses) for those hosts only, every other DNS name or IP
//    address excluded, so that even a leaked CA key mints nothing a client accepts elsewhere.
//  - SessionCa: loads that CA (PEM) in the sidecar and mints leaves on demand: one EC P-256 key
//    for all leaves, SAN DNS:host or IP:address, serverAuth, valid from an hour ago for a day,
//    a random 128-bit serial; cached per host (at most kMaxCachedLeaves, re-minted after 12 h).
// Thread-safety: leafFor may be called from any thread (a mutex guards the cache); the rest is
// immutable after construction.
#pragma once

#include <openssl/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sidecar {

struct CaPem {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8, unencrypted: kept in memory, never written
};

class SessionCa {
 public:
  static constexpr std::size_t kMaxCachedLeaves = 256;

  // A new self-signed CA: EC P-256, CN=`common_name`, CA:TRUE pathlen 0 and keyCertSign|cRLSign
  // (both critical), subject and authority key ids, valid from an hour ago for `validity`.
  // `permitted_hosts` (canonical hosts as policy::parseUrl writes them; IPv6 without brackets):
  // see above; empty means no name constraints. Throws std::invalid_argument for a host that is
  // not canonical, std::runtime_error when OpenSSL fails.
  [[nodiscard]] static CaPem generateCa(const std::string& common_name,
                                        const std::vector<std::string>& permitted_hosts = {},
                                        std::chrono::hours validity = std::chrono::hours(24 * 30));

  // Throws std::runtime_error saying which file is unreadable or not a CA certificate / its key.
  [[nodiscard]] static std::unique_ptr<SessionCa> fromFiles(const std::string& cert_path,
                                                            const std::string& key_path);
  [[nodiscard]] static std::unique_ptr<SessionCa> fromPem(std::string_view cert_pem,
                                                          std::string_view key_pem);

  ~SessionCa();
  SessionCa(const SessionCa&) = delete;
  SessionCa& operator=(const SessionCa&) = delete;

  // The leaf for `host` (a canonical domain name or IP literal, IPv6 without brackets), minted
  // or from the cache. Throws std::invalid_argument for anything else.
  [[nodiscard]] std::shared_ptr<X509> leafFor(const std::string& host);
  // The key of every leaf; lives as long as this SessionCa.
  [[nodiscard]] EVP_PKEY* leafKey() const noexcept;
  // The CA's own certificate; lives as long as this SessionCa.
  [[nodiscard]] X509* certificate() const noexcept;

 private:
  struct Impl;
  explicit SessionCa(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// PEM text of a certificate (for tests and for handing the CA to the server's trust-store code).
[[nodiscard]] std::string certificatePem(X509* certificate);

}  // namespace sidecar
