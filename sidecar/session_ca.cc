#include "sidecar/session_ca.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "policy/policy.h"

namespace sidecar {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using BnPtr = std::unique_ptr<BIGNUM, decltype(&BN_free)>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, decltype(&X509_EXTENSION_free)>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, decltype(&GENERAL_NAMES_free)>;
using NamePtr = std::unique_ptr<GENERAL_NAME, decltype(&GENERAL_NAME_free)>;

constexpr long kBackdateSeconds = 3600;
constexpr long kLeafSeconds = 24L * 3600;
constexpr auto kLeafReuse = std::chrono::hours(12);

// The reason OpenSSL gave last (its error queue holds codes and file names, never key bytes).
[[noreturn]] void fail(const std::string& what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  std::string reason = what;
  if (code != 0) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    reason += ": ";
    reason += text.data();
  }
  throw std::runtime_error(reason);
}

// Whether `host` is canonical as parseUrl writes it; sets `is_address` for an IP literal.
bool canonicalHost(const std::string& host, bool& is_address) {
  if (host.empty()) return false;
  const bool v6 = host.find(':') != std::string::npos;
  const auto parsed = policy::parseUrl("https://" + (v6 ? "[" + host + "]" : host) + "/");
  if (!parsed.url || parsed.url->host != host) return false;
  is_address = parsed.url->host_kind != policy::HostKind::kDomain;
  return true;
}

KeyPtr newKey() {
  KeyPtr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  if (!key) fail("cannot make an EC P-256 key");
  return key;
}

const EVP_MD* digestFor(EVP_PKEY* key) {
  // Ed25519/Ed448 sign without a separate digest.
  return EVP_PKEY_is_a(key, "ED25519") == 1 || EVP_PKEY_is_a(key, "ED448") == 1 ? nullptr
                                                                                : EVP_sha256();
}

// Version 3, a random positive 127-bit serial, valid from an hour ago for `seconds`.
CertPtr newCertificate(EVP_PKEY* key, long seconds) {
  CertPtr cert(X509_new(), X509_free);
  BnPtr serial(BN_new(), BN_free);
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), seconds) == nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    fail("cannot fill in a certificate");
  }
  return cert;
}

void setCommonName(X509* cert, const std::string& common_name) {
  X509_NAME* subject = X509_get_subject_name(cert);
  // X.509 bounds a common name at 64 characters (ub-common-name); a session id makes it longer.
  const std::string name = common_name.substr(0, 64);
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1,
                                 0) != 1) {
    fail("cannot set the common name");
  }
}

// Adds extensions written in OpenSSL's configuration syntax ("critical,CA:TRUE"); the values
// are fixed text or canonical hosts (no commas or colons that could add other entries).
void addExtensions(X509* cert, X509* issuer, const std::vector<std::pair<int, std::string>>& list) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : list) {
    ExtensionPtr extension(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()),
                           X509_EXTENSION_free);
    if (!extension || X509_add_ext(cert, extension.get(), -1) != 1) {
      fail(std::string("cannot add the extension ") + OBJ_nid2sn(nid));
    }
  }
}

// nameConstraints: each host's DNS subtree or single address; the other kind excluded whole.
std::string nameConstraints(const std::vector<std::string>& hosts) {
  std::string text = "critical";
  bool any_name = false;
  bool any_v4 = false;
  bool any_v6 = false;
  for (const auto& host : hosts) {
    bool is_address = false;
    if (!canonicalHost(host, is_address)) {
      throw std::invalid_argument("generateCa: \"" + host +
                                  "\" is not a canonical host (lowercase name or IP literal, "
                                  "IPv6 without brackets)");
    }
    if (!is_address) {
      text += ",permitted;DNS:" + host;
      any_name = true;
    } else if (host.find(':') == std::string::npos) {
      text += ",permitted;IP:" + host + "/255.255.255.255";
      any_v4 = true;
    } else {
      text += ",permitted;IP:" + host + "/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
      any_v6 = true;
    }
  }
  // A kind without a permitted subtree would be unconstrained (RFC 5280 4.2.1.10): exclude it.
  // ".invalid" (RFC 6761) stands for "no DNS name": an empty excluded DNS subtree cannot be
  // written in this syntax.
  if (!any_name) text += ",permitted;DNS:invalid";
  if (!any_v4) text += ",excluded;IP:0.0.0.0/0.0.0.0";
  if (!any_v6) text += ",excluded;IP:::/::";
  return text;
}

void sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, digestFor(key)) <= 0) fail("cannot sign the certificate");
}

std::string pemOf(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("cannot write the key as PEM");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(size)};
}

BioPtr memoryBio(std::string_view text) {
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
  if (!bio) fail("cannot read PEM text");
  return bio;
}

std::string readFile(const std::string& path, const char* what) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  if (!bio) {
    ERR_clear_error();
    throw std::runtime_error(std::string("cannot read the session CA's ") + what + " " + path +
                             ": check the path and that the sidecar may read it");
  }
  std::string text;
  std::array<char, 4096> chunk{};
  int n = 0;
  while ((n = BIO_read(bio.get(), chunk.data(), static_cast<int>(chunk.size()))) > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

struct SessionCa::Impl {
  CertPtr cert{nullptr, X509_free};
  KeyPtr key{nullptr, EVP_PKEY_free};
  KeyPtr leaf_key{nullptr, EVP_PKEY_free};

  struct Cached {
    std::shared_ptr<X509> leaf;
    std::chrono::steady_clock::time_point minted;
  };
  std::mutex mutex;
  std::unordered_map<std::string, Cached> leaves;  // guarded by mutex
  std::deque<std::string> order;                   // hosts in minting order; guarded by mutex

  std::shared_ptr<X509> mint(const std::string& host, bool is_address) const {
    CertPtr leaf = newCertificate(leaf_key.get(), kLeafSeconds);
    if (!is_address) setCommonName(leaf.get(), host);  // an address has no name to check
    if (X509_set_issuer_name(leaf.get(), X509_get_subject_name(cert.get())) != 1) {
      fail("cannot set the issuer");
    }
    addExtensions(leaf.get(), cert.get(),
                  {{NID_basic_constraints, "critical,CA:FALSE"},
                   {NID_key_usage, "critical,digitalSignature"},
                   {NID_ext_key_usage, "serverAuth"},
                   {NID_subject_key_identifier, "hash"},
                   {NID_authority_key_identifier, "keyid:always"}});
    addSubjectAltName(leaf.get(), host, is_address);
    sign(leaf.get(), key.get());
    return {leaf.release(), X509_free};
  }

  // Built as a GENERAL_NAME, not from text: the host goes in as data.
  static void addSubjectAltName(X509* leaf, const std::string& host, bool is_address) {
    NamesPtr names(GENERAL_NAMES_new(), GENERAL_NAMES_free);
    NamePtr name(GENERAL_NAME_new(), GENERAL_NAME_free);
    if (!names || !name) fail("cannot make a subjectAltName");
    if (is_address) {
      ASN1_OCTET_STRING* address = a2i_IPADDRESS(host.c_str());
      if (address == nullptr) fail("cannot encode the address " + host);
      GENERAL_NAME_set0_value(name.get(), GEN_IPADD, address);
    } else {
      ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
      if (dns == nullptr || ASN1_STRING_set(dns, host.data(), static_cast<int>(host.size())) != 1) {
        ASN1_IA5STRING_free(dns);
        fail("cannot encode the name " + host);
      }
      GENERAL_NAME_set0_value(name.get(), GEN_DNS, dns);
    }
    GENERAL_NAME* owned = name.release();
    if (sk_GENERAL_NAME_push(names.get(), owned) == 0) {  // on success, names owns it
      GENERAL_NAME_free(owned);
      fail("cannot make a subjectAltName");
    }
    if (X509_add1_ext_i2d(leaf, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1) {
      fail("cannot add the subjectAltName");
    }
  }
};

SessionCa::SessionCa(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SessionCa::~SessionCa() = default;

CaPem SessionCa::generateCa(const std::string& common_name,
                            const std::vector<std::string>& permitted_hosts,
                            std::chrono::hours validity) {
  const std::string constraints = permitted_hosts.empty() ? "" : nameConstraints(permitted_hosts);
  KeyPtr key = newKey();
  CertPtr cert = newCertificate(
      key.get(), static_cast<long>(std::chrono::seconds(validity).count()) + kBackdateSeconds);
  setCommonName(cert.get(), common_name);
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1) {
    fail("cannot set the issuer");
  }
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
      {NID_key_usage, "critical,keyCertSign,cRLSign"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!constraints.empty()) extensions.emplace_back(NID_name_constraints, constraints);
  addExtensions(cert.get(), cert.get(), extensions);
  sign(cert.get(), key.get());
  return {certificatePem(cert.get()), pemOf(key.get())};
}

std::unique_ptr<SessionCa> SessionCa::fromFiles(const std::string& cert_path,
                                                const std::string& key_path) {
  return fromPem(readFile(cert_path, "certificate"), readFile(key_path, "key"));
}

std::unique_ptr<SessionCa> SessionCa::fromPem(std::string_view cert_pem, std::string_view key_pem) {
  auto impl = std::make_unique<Impl>();
  impl->cert.reset(PEM_read_bio_X509(memoryBio(cert_pem).get(), nullptr, nullptr, nullptr));
  if (!impl->cert) fail("the session CA certificate is not a PEM certificate");
  impl->key.reset(PEM_read_bio_PrivateKey(memoryBio(key_pem).get(), nullptr, nullptr, nullptr));
  if (!impl->key) fail("the session CA key is not an unencrypted PEM private key");
  if (X509_check_ca(impl->cert.get()) < 1) {
    throw std::runtime_error("the session CA certificate is not a CA (basicConstraints CA:TRUE)");
  }
  if (X509_check_private_key(impl->cert.get(), impl->key.get()) != 1) {
    fail("the session CA key does not belong to its certificate");
  }
  impl->leaf_key = newKey();
  return std::unique_ptr<SessionCa>(new SessionCa(std::move(impl)));
}

std::shared_ptr<X509> SessionCa::leafFor(const std::string& host) {
  bool is_address = false;
  if (!canonicalHost(host, is_address)) {
    throw std::invalid_argument("no certificate for \"" + host +
                                "\": not a canonical host name or IP literal");
  }
  const auto now = std::chrono::steady_clock::now();
  const std::lock_guard lock(impl_->mutex);
  auto found = impl_->leaves.find(host);
  if (found != impl_->leaves.end() && now - found->second.minted < kLeafReuse) {
    return found->second.leaf;
  }
  auto leaf = impl_->mint(host, is_address);
  if (found != impl_->leaves.end()) {
    found->second = {leaf, now};  // stays where it was in `order`
    return leaf;
  }
  if (impl_->leaves.size() >= kMaxCachedLeaves) {
    impl_->leaves.erase(impl_->order.front());
    impl_->order.pop_front();
  }
  impl_->leaves.emplace(host, Impl::Cached{leaf, now});
  impl_->order.push_back(host);
  return leaf;
}

EVP_PKEY* SessionCa::leafKey() const noexcept { return impl_->leaf_key.get(); }

X509* SessionCa::certificate() const noexcept { return impl_->cert.get(); }

std::string certificatePem(X509* certificate) {
  BioPtr bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_X509(bio.get(), certificate) != 1) {
    fail("cannot write the certificate as PEM");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(size)};
}

}  // namespace sidecar
