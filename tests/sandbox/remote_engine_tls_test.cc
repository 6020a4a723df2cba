// The TLS side of remote engines, against the second dockerd of scripts/tls_dockerd.sh: a client
// the engine does not trust, an engine our CA did not sign, a certificate issued for another
// name, and no TLS at all are each refused with an error naming what to fix. Also the sweep that
// fails the run when anything but the agent volume is left on the TLS engine. What TLS costs is
// measured in bench/remote.mjs, not here.
#include <gtest/gtest.h>

#include <vector>

#include "tls_engine_support.h"

namespace {

using namespace tls_engine;

// Fails the run if the TLS engine holds any container after the tests (it is ours alone), and
// removes them.
class TlsEngineLeakSweep : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto engine = tlsEngine();
    if (!engine) return;
    auto tls = client(*engine);
    std::vector<std::string> left;
    for (const auto& item : tls.request(Method::kGet, "/containers/json?all=1").json()) {
      left.push_back(item.at("Id").get<std::string>());
    }
    for (const auto& id : left) forceRemoveContainer(tls, id);
    EXPECT_TRUE(left.empty()) << left.size() << " container(s) left on the TLS engine";
    EngineClient local;
    const auto mine = containersOfThisProcess(local);
    for (const auto& id : mine) forceRemoveContainer(local, id);
    EXPECT_TRUE(mine.empty()) << mine.size() << " container(s) left on the local engine";
  }
};
// NOLINTNEXTLINE(cert-err58-cpp): gtest registers environments this way; it does not throw.
const auto* const kSweep = ::testing::AddGlobalTestEnvironment(new TlsEngineLeakSweep);

class RemoteEngineTls : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = tlsEngine();
    if (!found) GTEST_FAIL() << kNoEngine;  // a missing engine fails: nothing may skip
    engine_ = *found;
  }

  // The engine check's detail and create()'s error for these options; both must fail.
  void expectRefused(const DockerBackendOptions& options, const std::string& reason) {
    DockerBackend backend(options);
    const auto checks = backend.healthChecks();
    ASSERT_EQ(checks.size(), 1U) << "nothing else is checked without the engine";
    EXPECT_FALSE(checks[0].ok);
    EXPECT_NE(checks[0].detail.find(reason), std::string::npos) << checks[0].detail;
    try {
      (void)backend.create(remoteSpec(engine_));
      ADD_FAILURE() << "created a sandbox through a refused connection";
    } catch (const SandboxError& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  }

  TlsEngine engine_;
};

TEST_F(RemoteEngineTls, AClientCertificateTheEngineDoesNotTrustIsRefused) {
  auto options = remoteOptions(engine_);
  options.tls.cert_file = engine_.certs + "/rogue-client.pem";
  options.tls.key_file = engine_.certs + "/rogue-client-key.pem";
  expectRefused(options, "refused this client's TLS certificate");
  expectRefused(options, "--tlscacert must be the CA that signed docker.tls.cert_file " +
                             options.tls.cert_file);
}

TEST_F(RemoteEngineTls, AnEngineOurCaDidNotSignIsRefused) {
  auto options = remoteOptions(engine_);
  options.tls.ca_file = engine_.certs + "/rogue-ca.pem";
  expectRefused(options, "the engine's certificate does not verify against docker.tls.ca_file " +
                             options.tls.ca_file);
}

TEST_F(RemoteEngineTls, TheCertificateMustNameTheHostWeConnectTo) {
  // The server certificate lists IP:127.0.0.1 only; "localhost" reaches the same port.
  auto options = remoteOptions(engine_);
  const auto endpoint = common::parseEngineHost(engine_.host);
  options.host = "tcp://localhost:" + std::to_string(endpoint.port);
  expectRefused(options, "the engine's certificate is not issued for 'localhost'");
}

TEST_F(RemoteEngineTls, NeverWithoutClientCertificatesAndNotWithTheWrongKey) {
  auto options = remoteOptions(engine_);
  options.tls = {};
  try {
    DockerBackend backend(options);
    ADD_FAILURE() << "a backend for a tcp:// engine without TLS";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("docker.tls.ca_file is required for a tcp:// engine"),
              std::string::npos)
        << e.what();
  }
  options = remoteOptions(engine_);
  options.tls.key_file = engine_.certs + "/rogue-client-key.pem";
  try {
    DockerBackend backend(options);
    ADD_FAILURE() << "a client certificate with another certificate's key";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the private key of docker.tls.cert_file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
