// The files that let the sandbox trust the session CA of the egress proxy's TLS interception
// (tls_intercept.h), written next to the egress socket (the directory the sandbox sees
// read-only at /run/mcp), mode 0644, each atomically (a temporary file in the same directory,
// then rename):
//  - egress-ca.pem: the session CA's certificate only (NODE_EXTRA_CA_CERTS);
//  - ca-bundle.pem: the system CA bundle followed by the session CA's certificate (SSL_CERT_FILE,
//    REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO); just the session CA when the system has
//    no bundle.
// Only certificates: the CA's key never leaves the sidecar's memory.
// Thread-safety: plain functions on the file system; no shared state.
#pragma once

#include <string>
#include <vector>

namespace sidecar {

inline constexpr const char* kEgressCaFileName = "egress-ca.pem";
inline constexpr const char* kCaBundleFileName = "ca-bundle.pem";

// The first readable of the usual system bundles (Debian's, which the sidecar image copies in,
// then Fedora's), or "" when there is none.
[[nodiscard]] std::string findSystemCaBundle();

// Writes both files into `dir`; returns their paths (egress-ca.pem first). `system_bundle` may
// be "" (then the bundle holds the session CA only). Throws std::runtime_error naming the file
// that cannot be written (nothing is left behind).
std::vector<std::string> writeEgressCaFiles(const std::string& dir, const std::string& ca_cert_pem,
                                            const std::string& system_bundle);

// Unlinks `paths`, ignoring the ones already gone.
void removeEgressCaFiles(const std::vector<std::string>& paths) noexcept;

}  // namespace sidecar
