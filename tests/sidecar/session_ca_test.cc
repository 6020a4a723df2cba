// The session CA (sidecar/session_ca.h): a leaf verifies against the CA for its host (name or
// address) as a TLS client checks it; the CA's name constraints make a leaf for any other host
// fail verification; the CA's extensions; the leaf cache; hosts, PEM and files it refuses.
#include "sidecar/session_ca.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sidecar::CaPem;
using sidecar::SessionCa;

// X509_V_OK, or the error OpenSSL's chain verification finds for `leaf` under `ca` alone,
// with the TLS server purpose and the host (name or address) checked as a client does.
int verify(X509* ca, X509* leaf, const std::string& host) {
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (host.find_first_not_of("0123456789.") == std::string::npos ||
      host.find(':') != std::string::npos) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

std::unique_ptr<SessionCa> makeCa(const std::vector<std::string>& permitted = {}) {
  const CaPem pem = SessionCa::generateCa("sandbox-mcp test CA", permitted);
  return SessionCa::fromPem(pem.cert_pem, pem.key_pem);
}

int verifyLeaf(SessionCa& ca, const std::string& host) {
  return verify(ca.certificate(), ca.leafFor(host).get(), host);
}

TEST(SessionCa, LeafForANameVerifiesAgainstTheCa) {
  auto ca = makeCa();
  const auto leaf = ca->leafFor("api.example.com");
  EXPECT_EQ(verify(ca->certificate(), leaf.get(), "api.example.com"), X509_V_OK);
  EXPECT_EQ(X509_check_private_key(leaf.get(), ca->leafKey()), 1);
  EXPECT_EQ(verify(ca->certificate(), leaf.get(), "other.example.com"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(X509_check_purpose(leaf.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_ca(leaf.get()), 0);
}

TEST(SessionCa, LeafForAnAddressVerifiesAgainstTheCa) {
  auto ca = makeCa();
  EXPECT_EQ(verifyLeaf(*ca, "127.0.0.1"), X509_V_OK);
  EXPECT_EQ(verifyLeaf(*ca, "2001:db8::1"), X509_V_OK);
  EXPECT_EQ(verify(ca->certificate(), ca->leafFor("127.0.0.1").get(), "127.0.0.2"),
            X509_V_ERR_IP_ADDRESS_MISMATCH);
}

TEST(SessionCa, NameConstraintsLimitTheCaToItsHosts) {
  auto ca = makeCa({"api.example.com", "uploads.example.org"});
  EXPECT_EQ(verifyLeaf(*ca, "api.example.com"), X509_V_OK);
  EXPECT_EQ(verifyLeaf(*ca, "uploads.example.org"), X509_V_OK);
  EXPECT_EQ(verifyLeaf(*ca, "v2.api.example.com"), X509_V_OK);  // a DNS subtree
  EXPECT_EQ(verifyLeaf(*ca, "example.com"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(verifyLeaf(*ca, "evil.test"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(verifyLeaf(*ca, "xapi.example.com"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(verifyLeaf(*ca, "127.0.0.1"), X509_V_ERR_EXCLUDED_VIOLATION);
  EXPECT_EQ(verifyLeaf(*ca, "::1"), X509_V_ERR_EXCLUDED_VIOLATION);
}

TEST(SessionCa, NameConstraintsForAnAddressExcludeEveryName) {
  auto ca = makeCa({"10.1.2.3"});
  EXPECT_EQ(verifyLeaf(*ca, "10.1.2.3"), X509_V_OK);
  EXPECT_EQ(verifyLeaf(*ca, "10.1.2.4"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(verifyLeaf(*ca, "api.example.com"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_NE(verifyLeaf(*ca, "::1"), X509_V_OK);  // outside the permitted IPv4 address too
}

TEST(SessionCa, ALongNameIsCutToWhatX509Allows) {
  // "sandbox-mcp session " and a session id with its instance suffix: past 64 characters.
  const auto pem = sidecar::SessionCa::generateCa(
      "sandbox-mcp session s-b6dddd602d62d30288fde6d5f1bf3e31~1ab8757096fc77d0", {"localhost"});
  EXPECT_NE(sidecar::SessionCa::fromPem(pem.cert_pem, pem.key_pem), nullptr);
}

TEST(SessionCa, CaCarriesCriticalConstraintsAndKeyIds) {
  auto ca = makeCa({"api.example.com"});
  X509* cert = ca->certificate();
  EXPECT_EQ(X509_check_ca(cert), 1);
  EXPECT_EQ(X509_get_pathlen(cert), 0);
  EXPECT_EQ(X509_get_key_usage(cert), static_cast<std::uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  for (const int nid : {NID_basic_constraints, NID_key_usage, NID_name_constraints}) {
    const int index = X509_get_ext_by_NID(cert, nid, -1);
    ASSERT_GE(index, 0) << OBJ_nid2sn(nid);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(cert, index)), 1) << OBJ_nid2sn(nid);
  }
  EXPECT_NE(X509_get0_subject_key_id(cert), nullptr);
  EXPECT_EQ(X509_get_ext_by_NID(makeCa()->certificate(), NID_name_constraints, -1), -1);
}

TEST(SessionCa, CachesALeafPerHost) {
  auto ca = makeCa();
  const auto first = ca->leafFor("api.example.com");
  EXPECT_EQ(ca->leafFor("api.example.com"), first);
  EXPECT_NE(ca->leafFor("uploads.example.com"), first);
  for (std::size_t i = 0; i < SessionCa::kMaxCachedLeaves; ++i) {
    (void)ca->leafFor("h" + std::to_string(i) + ".example.com");
  }
  EXPECT_NE(ca->leafFor("api.example.com"), first);  // evicted, minted again
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(first.get()),
                             X509_get0_serialNumber(ca->leafFor("api.example.com").get())),
            0);
}

TEST(SessionCa, RefusesHostsThatAreNotCanonical) {
  auto ca = makeCa();
  for (const std::string host :
       {"", "API.example.com", "[::1]", "a,DNS:evil.test", "example.com.", "0x7f.1", "a b"}) {
    EXPECT_THROW((void)ca->leafFor(host), std::invalid_argument) << host;
    EXPECT_THROW((void)SessionCa::generateCa("ca", {host}), std::invalid_argument) << host;
  }
}

TEST(SessionCa, RefusesWhatIsNotACaAndItsKey) {
  const CaPem pem = SessionCa::generateCa("one");
  const CaPem other = SessionCa::generateCa("two");
  EXPECT_THROW((void)SessionCa::fromPem("not a certificate", pem.key_pem), std::runtime_error);
  EXPECT_THROW((void)SessionCa::fromPem(pem.cert_pem, "not a key"), std::runtime_error);
  EXPECT_THROW((void)SessionCa::fromPem(pem.cert_pem, other.key_pem), std::runtime_error);
  auto ca = SessionCa::fromPem(pem.cert_pem, pem.key_pem);
  const std::string leaf_pem = sidecar::certificatePem(ca->leafFor("api.example.com").get());
  try {
    (void)SessionCa::fromPem(leaf_pem, pem.key_pem);
    ADD_FAILURE() << "a leaf was accepted as a CA";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("not a CA"), std::string::npos) << error.what();
  }
}

TEST(SessionCa, LoadsFromFilesAndNamesAMissingOne) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("session-ca-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const CaPem pem = SessionCa::generateCa("files");
  std::ofstream(dir / "ca.pem") << pem.cert_pem;
  std::ofstream(dir / "ca.key") << pem.key_pem;
  auto ca = SessionCa::fromFiles((dir / "ca.pem").string(), (dir / "ca.key").string());
  EXPECT_EQ(verifyLeaf(*ca, "api.example.com"), X509_V_OK);
  try {
    (void)SessionCa::fromFiles((dir / "ca.pem").string(), (dir / "missing.key").string());
    ADD_FAILURE() << "a missing key file was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find((dir / "missing.key").string()), std::string::npos)
        << error.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
