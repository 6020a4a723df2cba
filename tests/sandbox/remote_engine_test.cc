// The pure parts of remote (tcp://) engines: the tar writer, the agent volume's archive and
// hash, the container body without host mounts, and the engine client's TLS refusals, among them
// the engine certificate's names (against certificates made here and a TLS listener of the test's
// own: no engine needed).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/docker/agent_volume.h"
#include "sandbox/docker/container_config.h"
#include "sandbox/docker/engine_client.h"
#include "sandbox/docker/tar_writer.h"
#include "sandbox/docker/tls_connection.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace sandbox;
using namespace sandbox::docker;

std::string tempDir(const char* name) {
  std::string dir = ::testing::TempDir() + "remote-" + name + "-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `command` with `input` on stdin; returns its exit status.
int pipeInto(const std::string& command, const std::string& input) {
  FILE* pipe = ::popen(command.c_str(), "w");
  if (pipe == nullptr) return -1;
  std::fwrite(input.data(), 1, input.size(), pipe);
  return ::pclose(pipe);
}

unsigned octal(const std::string& block, std::size_t offset, std::size_t size) {
  return static_cast<unsigned>(std::stoul(block.substr(offset, size), nullptr, 8));
}

TEST(TarWriter, WritesUstarHeadersWithValidChecksums) {
  const std::string archive =
      ustarArchive({{"dir", "", 0755, true}, {"dir/f", "hello", 0640, false}});
  ASSERT_EQ(archive.size(), 512U * 5);  // dir header, file header, one data block, two zeros
  const std::string dir = archive.substr(0, 512);
  const std::string file = archive.substr(512, 512);
  EXPECT_EQ(dir.substr(0, 5), std::string("dir/\0", 5));
  EXPECT_EQ(dir[156], '5');
  EXPECT_EQ(file.substr(0, 6), std::string("dir/f\0", 6));
  EXPECT_EQ(file[156], '0');
  EXPECT_EQ(file.substr(257, 8), std::string("ustar\0"
                                             "00",
                                             8));
  EXPECT_EQ(octal(file, 100, 7), 0640U);
  EXPECT_EQ(octal(file, 124, 11), 5U);
  for (const std::string& header : {dir, file}) {
    unsigned sum = 0;
    for (std::size_t i = 0; i < 512; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
    }
    EXPECT_EQ(octal(header, 148, 6), sum);
  }
  EXPECT_EQ(archive.substr(1024, 5), "hello");
  EXPECT_EQ(archive.substr(std::size_t{3} * 512), std::string(1024, '\0'));
  EXPECT_EQ(ustarArchive({}), std::string(1024, '\0'));
}

TEST(TarWriter, GnuTarExtractsWhatItWrites) {
  const std::string dir = tempDir("tar");
  const std::string deep = std::string(90, 'd') + "/" + std::string(60, 'e') + "/file.bin";
  std::string binary(70000, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 31);
  const std::string archive = ustarArchive({{"bin", "", 0755, true},
                                            {"bin/tool", "#!/bin/sh\necho hi\n", 0755, false},
                                            {"empty", "", 0600, false},
                                            {deep, binary, 0644, false}});
  ASSERT_EQ(pipeInto("tar -x --no-same-owner -f - -C " + dir, archive), 0);
  EXPECT_EQ(readFile(dir + "/bin/tool"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(fs::status(dir + "/bin/tool").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(fs::status(dir + "/empty").permissions() & fs::perms::all, fs::perms(0600));
  EXPECT_EQ(fs::file_size(dir + "/empty"), 0U);
  EXPECT_EQ(readFile(dir + "/" + deep), binary) << "a path over 100 bytes goes through prefix";
  fs::remove_all(dir);
}

TEST(TarWriter, RefusesPathsOutsideTheArchive) {
  const std::vector<std::string> paths = {"",
                                          "/etc/passwd",
                                          "..",
                                          "../x",
                                          "a/../../x",
                                          "a/..",
                                          std::string("a\0b", 3),
                                          std::string(300, 'x')};
  for (const auto& path : paths) {
    EXPECT_THROW((void)ustarArchive({{path, "x", 0644, false}}), SandboxError) << path;
  }
}

TEST(AgentVolume, ArchiveHoldsTheAgentAndModulesWithTheMarkerLast) {
  const AgentVolumeContents contents{"ELF...agent", {{"sandbox_mcp.py", "X = 1\n"}}};
  const std::string hash = agentVolumeHash(contents);
  EXPECT_EQ(hash.size(), 16U);
  const std::string dir = tempDir("volume");
  ASSERT_EQ(pipeInto("tar -x --no-same-owner -f - -C " + dir, agentVolumeArchive(contents, hash)),
            0);
  EXPECT_EQ(readFile(dir + "/agent"), "ELF...agent");
  EXPECT_EQ(fs::status(dir + "/agent").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(readFile(dir + "/python/sandbox_mcp.py"), "X = 1\n");
  EXPECT_EQ(readFile(dir + "/.complete"), hash + "\n");
  fs::remove_all(dir);
  // The marker is the archive's last entry: a fill cut short has none and is redone.
  const std::string archive = agentVolumeArchive(contents, hash);
  EXPECT_GT(archive.rfind(".complete"), archive.rfind("ELF...agent"));

  EXPECT_NE(agentVolumeHash({"ELF...agent2", contents.python_modules}), hash);
  EXPECT_NE(agentVolumeHash({"ELF...agent", {{"sandbox_mcp.py", "X = 2\n"}}}), hash);
  EXPECT_NE(agentVolumeHash({"ELF...agent", {}}), hash);
  EXPECT_EQ(agentVolumeHash(contents), hash);
  EXPECT_THROW((void)agentVolumeArchive({"a", {{"../evil.py", ""}}}, hash), SandboxError);
}

SandboxSpec remoteSpec() {
  SandboxSpec spec;
  spec.image = "img";
  spec.runtime = "runsc";
  spec.python_helper_dir = "/run/x/python";
  return spec;
}

TEST(ContainerCreateBody, ARemoteEngineMountsTheAgentVolumeAndNoHostPath) {
  const json body =
      containerCreateBody(remoteSpec(), AgentMounts::fromVolume("sandbox-mcp-agent-0123"), {});
  const json& host = body["HostConfig"];
  EXPECT_EQ(host["Binds"], json::array());
  EXPECT_EQ(host["Mounts"], json::parse(R"([{"Type": "volume", "Source": "sandbox-mcp-agent-0123",
      "Target": "/.sandbox", "ReadOnly": true, "VolumeOptions": {"NoCopy": true}}])"));
  EXPECT_EQ(body["Cmd"], json({"/.sandbox/agent"}));
  const json& env = body["Env"];
  EXPECT_NE(std::find(env.begin(), env.end(), "PYTHONPATH=/.sandbox/python"), env.end());
  // A local engine gets binds and no volume.
  const json local =
      containerCreateBody(remoteSpec(), AgentMounts::fromHost("/opt/agent", "/run/c/x"), {});
  EXPECT_EQ(local["HostConfig"]["Mounts"], json::array());
  EXPECT_EQ(local["HostConfig"]["Binds"],
            json({"/opt/agent:/.sandbox/agent:ro", "/run/c/x:/.sandbox/channel:ro",
                  "/run/x/python:/.sandbox/python:ro"}));
}

TEST(ContainerCreateBody, ARemoteEngineRefusesHostVolumesAndSaysWhatToUse) {
  SandboxSpec spec = remoteSpec();
  spec.volumes = {{"/run/sandbox-mcp/i/s/sock", "/run/mcp", true}};
  try {
    (void)containerCreateBody(spec, AgentMounts::fromVolume("v"), {});
    FAIL() << "a host path was mounted on a remote engine";
  } catch (const SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/run/sandbox-mcp/i/s/sock"), std::string::npos) << what;
    EXPECT_NE(what.find("another machine"), std::string::npos) << what;
    EXPECT_NE(what.find("mcp_allowlist"), std::string::npos) << what;
    EXPECT_NE(what.find("unix://"), std::string::npos) << what;
  }
}

std::string errorOf(const EngineClientOptions& options) {
  try {
    EngineClient client(options);
  } catch (const SandboxError& e) {
    return e.what();
  }
  return "";
}

TEST(EngineClient, NeverSpeaksToATcpEngineWithoutClientCertificates) {
  EngineClientOptions options;
  options.endpoint = common::parseEngineHost("tcp://127.0.0.1:2376");
  EXPECT_NE(errorOf(options).find("docker.tls.ca_file is required for a tcp:// engine"),
            std::string::npos)
      << errorOf(options);
  const std::string dir = tempDir("tls");
  std::ofstream(dir + "/ca.pem") << "not a certificate\n";
  options.tls = {dir + "/ca.pem", dir + "/missing-cert.pem", dir + "/key.pem"};
  EXPECT_NE(errorOf(options).find("cannot read docker.tls.cert_file " + dir + "/missing-cert.pem"),
            std::string::npos)
      << errorOf(options);
  std::ofstream(dir + "/missing-cert.pem") << "x\n";
  std::ofstream(dir + "/key.pem") << "x\n";
  EXPECT_NE(errorOf(options).find("cannot use docker.tls.ca_file " + dir + "/ca.pem"),
            std::string::npos)
      << errorOf(options);
  fs::remove_all(dir);

  EngineClientOptions local;
  local.tls.ca_file = "/etc/ssl/ca.pem";
  EXPECT_NE(errorOf(local).find("TLS files are for tcp:// engines"), std::string::npos);
}

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

KeyPtr newKey() { return {EVP_EC_gen("P-256"), EVP_PKEY_free}; }

// A certificate for `key` whose subject is CN=`common_name`, with a subjectAltName when `san` is
// not empty ("DNS:a, IP:1.2.3.4"), signed by `issuer` (self-signed without one).
CertPtr makeCert(EVP_PKEY* key, const std::string& common_name, const std::string& san,
                 const std::pair<X509*, EVP_PKEY*>& issuer = {nullptr, nullptr}) {
  static long serial = 1;
  CertPtr cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer.first != nullptr ? issuer.first : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, signer, cert.get(), nullptr, nullptr, 0);
  std::vector<std::pair<int, std::string>> extensions;
  if (issuer.first == nullptr) extensions.emplace_back(NID_basic_constraints, "critical,CA:TRUE");
  if (!san.empty()) extensions.emplace_back(NID_subject_alt_name, san);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    EXPECT_NE(extension, nullptr) << value;
    X509_add_ext(cert.get(), extension, -1);
    X509_EXTENSION_free(extension);
  }
  X509_sign(cert.get(), issuer.second != nullptr ? issuer.second : key, EVP_sha256());
  return cert;
}

void writePem(const std::string& path, X509* cert) {
  std::unique_ptr<FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "w"), std::fclose);
  ASSERT_TRUE(file && PEM_write_X509(file.get(), cert) == 1) << path;
}

void writePem(const std::string& path, EVP_PKEY* key) {
  std::unique_ptr<FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "w"), std::fclose);
  ASSERT_TRUE(file &&
              PEM_write_PrivateKey(file.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1)
      << path;
}

TEST(TlsHostCheck, OnlyASubjectAltNameNamesTheEngineAndWildcardsAreWholeLabels) {
  const auto key = newKey();
  struct Row {
    const char* name;
    const char* common_name;
    const char* san;
    const char* host;
    bool names_it;
  };
  const Row rows[] = {
      {"a DNS name in the CN only", "localhost", "", "localhost", false},
      {"an IP address in the CN only", "127.0.0.1", "", "127.0.0.1", false},
      {"the CN beside a subjectAltName of another name", "localhost", "DNS:other", "localhost",
       false},
      {"a partial wildcard", "x", "DNS:f*.example.com", "foo.example.com", false},
      {"a wildcard for a whole label", "x", "DNS:*.example.com", "foo.example.com", true},
      {"a wildcard spans one label only", "x", "DNS:*.example.com", "a.b.example.com", false},
      {"a DNS subjectAltName", "x", "DNS:engine.example.com", "engine.example.com", true},
      {"a DNS subjectAltName of another name", "x", "DNS:engine.example.com", "example.com", false},
      {"an IP subjectAltName", "x", "IP:127.0.0.1", "127.0.0.1", true},
      {"an IP subjectAltName of another address", "x", "IP:127.0.0.1", "127.0.0.2", false},
      {"an IP address is not a DNS name", "x", "DNS:127.0.0.1", "127.0.0.1", false},
      {"an IPv6 subjectAltName", "x", "IP:::1", "::1", true},
  };
  for (const auto& row : rows) {
    const auto cert = makeCert(key.get(), row.common_name, row.san);
    EXPECT_EQ(detail::certificateNamesHost(cert.get(), row.host), row.names_it) << row.name;
  }
  EXPECT_FALSE(detail::certificateNamesHost(nullptr, "localhost"));
}

// A TLS server on 127.0.0.1 with one certificate: handshakes with whoever connects, then reads
// until they leave. It never asks for a client certificate.
class TlsListener {
 public:
  TlsListener(const std::string& cert_file, const std::string& key_file) {
    context_.use_certificate_chain_file(cert_file);
    context_.use_private_key_file(key_file, boost::asio::ssl::context::pem);
    const boost::asio::ip::tcp::endpoint any(boost::asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(any.protocol());
    acceptor_.bind(any);
    acceptor_.listen();
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TlsListener() {
    ioc_.stop();
    thread_.join();
  }
  TlsListener(const TlsListener&) = delete;
  TlsListener& operator=(const TlsListener&) = delete;

  [[nodiscard]] int port() const { return acceptor_.local_endpoint().port(); }

 private:
  using Stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket peer) {
      if (ec) return;
      auto stream = std::make_shared<Stream>(std::move(peer), context_);
      stream->async_handshake(Stream::server, [this, stream](boost::system::error_code failed) {
        if (!failed) read(stream);
      });
      accept();
    });
  }

  void read(const std::shared_ptr<Stream>& stream) {
    stream->async_read_some(boost::asio::buffer(buffer_),
                            [this, stream](boost::system::error_code ec, std::size_t) {
                              if (!ec) read(stream);
                            });
  }

  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_{boost::asio::ssl::context::tls_server};
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  std::array<char, 4096> buffer_{};
  std::thread thread_;
};

// Connects to `host`:`port` as EngineClient does; "" when the connection is made, else why not.
std::string connectError(const EngineTlsFiles& files, const std::string& host, int port) {
  try {
    detail::TlsContext context(files);
    detail::TlsConnection connection(
        common::parseEngineHost("tcp://" + host + ":" + std::to_string(port)), context,
        std::chrono::seconds(10));
    return "";
  } catch (const EngineError& e) {
    return e.what();
  }
}

TEST(TlsConnection, RefusesAnEngineNamedOnlyInItsCertificatesCommonName) {
  const std::string dir = tempDir("tls-names");
  const auto ca_key = newKey();
  const auto ca = makeCert(ca_key.get(), "test ca", "");
  const auto client_key = newKey();
  const auto client = makeCert(client_key.get(), "client", "", {ca.get(), ca_key.get()});
  writePem(dir + "/ca.pem", ca.get());
  writePem(dir + "/client.pem", client.get());
  writePem(dir + "/client-key.pem", client_key.get());
  const EngineTlsFiles files{dir + "/ca.pem", dir + "/client.pem", dir + "/client-key.pem"};
  // Server certificates signed by that CA: "localhost" and 127.0.0.1 in the CN only (what
  // boost::asio::ssl::host_name_verification accepted for a DNS name), and as subjectAltNames.
  const auto server_key = newKey();
  writePem(dir + "/server-key.pem", server_key.get());
  const auto serve = [&](const char* common_name, const char* san) {
    const auto cert = makeCert(server_key.get(), common_name, san, {ca.get(), ca_key.get()});
    const std::string path = dir + "/server-" + common_name + ".pem";
    writePem(path, cert.get());
    return std::make_unique<TlsListener>(path, dir + "/server-key.pem");
  };

  const auto cn_localhost = serve("localhost", "");
  const std::string refused = connectError(files, "localhost", cn_localhost->port());
  EXPECT_NE(refused.find("the engine's certificate is not issued for 'localhost'"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("common name"), std::string::npos) << refused;
  const auto cn_address = serve("127.0.0.1", "");
  EXPECT_NE(connectError(files, "127.0.0.1", cn_address->port())
                .find("the engine's certificate is not issued for '127.0.0.1'"),
            std::string::npos);

  // The same CA, key and listener with the name as a subjectAltName: accepted.
  const auto san = serve("engine", "DNS:localhost,IP:127.0.0.1");
  EXPECT_EQ(connectError(files, "localhost", san->port()), "");
  EXPECT_EQ(connectError(files, "127.0.0.1", san->port()), "");
  fs::remove_all(dir);
}

}  // namespace
