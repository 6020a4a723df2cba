// The egress proxy (sidecar/egress_proxy.h) with secret headers, in-process on a temporary Unix
// socket, in front of HTTPS upstreams on 127.0.0.1 whose certificates come from a test CA (given
// as the extra upstream CA, as --egress-upstream-ca would). The client is the test, speaking
// CONNECT on the socket, then TLS trusting only the files the proxy wrote. Checked: the CA files
// appear at start (0644, certificates only, the bundle ending with the session CA) and go at
// stop; the session CA's name constraints permit the secret hosts only; a CONNECT to a secret
// host is intercepted and its requests get the configured value instead of the sandbox's; one to
// a host without secrets passes TLS through unopened; audit lines never hold a secret value; an
// intercepted connection ends at the connection time limit and at the session's byte budget.
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_lines.h"
#include "common/text.h"
#include "https_echo.h"
#include "sidecar/egress_ca_files.h"
#include "sidecar/egress_proxy.h"
#include "sidecar/secret_headers.h"
#include "sidecar/session_ca.h"

namespace {

using sidecar_test::HttpsEcho;

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using json = nlohmann::json;
using namespace std::chrono_literals;
using sidecar::SessionCa;

constexpr const char* kSecret = "Bearer sekrit-0123456789";

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The values of header `name` in an echoed request.
std::vector<std::string> headerValues(const json& seen, const std::string& name) {
  std::vector<std::string> values;
  for (const auto& field : seen["headers"]) {
    if (common::iequals(field[0].get<std::string>(), name)) values.push_back(field[1]);
  }
  return values;
}

using ClientStream = ssl::stream<net::local::stream_protocol::socket>;

// The sandbox: CONNECT localhost:`port` on the proxy's socket, then TLS for "localhost" trusting
// `ca_file` only. Blocking, 5 s receive timeout.
class TlsThroughProxy {
 public:
  TlsThroughProxy(const std::string& socket_path, std::uint16_t port, const std::string& ca_file) {
    auto& socket = stream_.next_layer();
    socket.connect(net::local::stream_protocol::endpoint(socket_path));
    timeval timeout{5, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    const std::string authority = "localhost:" + std::to_string(port);
    net::write(socket, net::buffer("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority +
                                   "\r\n\r\n"));
    net::streambuf head;
    const std::size_t n = net::read_until(socket, head, "\r\n\r\n");
    connect_answer_.assign(static_cast<const char*>(head.data().data()), n);
    context_.load_verify_file(ca_file);
    stream_.set_verify_mode(ssl::verify_peer);  // the stream copied the context's mode already
    SSL_ctrl(stream_.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>("localhost"));
    SSL_set1_host(stream_.native_handle(), "localhost");
    stream_.handshake(ssl::stream_base::client, handshake_error_);
  }
  ~TlsThroughProxy() {
    boost::system::error_code ignored;
    stream_.next_layer().shutdown(net::socket_base::shutdown_both, ignored);
  }
  TlsThroughProxy(const TlsThroughProxy&) = delete;
  TlsThroughProxy& operator=(const TlsThroughProxy&) = delete;

  [[nodiscard]] const std::string& connectAnswer() const { return connect_answer_; }
  [[nodiscard]] const boost::system::error_code& handshakeError() const { return handshake_error_; }
  // The common name of the certificate's issuer the proxy (or the upstream) presented.
  [[nodiscard]] std::string issuer() {
    std::unique_ptr<X509, decltype(&X509_free)> peer(
        SSL_get1_peer_certificate(stream_.native_handle()), X509_free);
    if (!peer) return "";
    std::array<char, 256> name{};
    X509_NAME_get_text_by_NID(X509_get_issuer_name(peer.get()), NID_commonName, name.data(),
                              static_cast<int>(name.size()));
    return name.data();
  }
  // GET `target` with the sandbox's own Authorization; the answer (throws on a transport error).
  http::response<http::string_body> get(const std::string& target,
                                        http::verb method = http::verb::get) {
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "localhost");
    request.set(http::field::authorization, "fake");
    http::write(stream_, request);
    http::response<http::string_body> response;
    http::read(stream_, buffer_, response);
    return response;  // NOLINT(clang-analyzer-cplusplus.Move): http::read moves it back
  }

 private:
  net::io_context io_;
  ssl::context context_{ssl::context::tls_client};
  ClientStream stream_{io_, context_};
  boost::beast::flat_buffer buffer_;
  std::string connect_answer_;
  boost::system::error_code handshake_error_;
};

class EgressSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("egress-secrets-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    const auto pem = SessionCa::generateCa("upstream test CA");
    upstream_ca_ = SessionCa::fromPem(pem.cert_pem, pem.key_pem);
    upstream_ca_file_ = (dir_ / "upstream-ca.pem").string();
    std::ofstream(upstream_ca_file_) << pem.cert_pem;
    config_.listen_path = (dir_ / "mcp.sock").string();
    config_.egress_listen_path = (dir_ / "run" / "egress.sock").string();
    std::filesystem::create_directories(dir_ / "run");
    config_.session_id = "s-secrets";
    config_.idle_timeout_ms = 2000;
    config_.egress_upstream_ca_file = upstream_ca_file_;
  }
  void TearDown() override {
    proxy_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts the proxy allowing localhost on `ports`, with `kSecret` as Authorization for
  // localhost:`secret_port` (from a 0600 file, as the server writes it).
  void start(const std::vector<std::uint16_t>& ports, std::uint16_t secret_port) {
    json rules = json::array();
    for (const auto port : ports) rules.push_back("localhost:" + std::to_string(port));
    const auto secrets_file = dir_ / "secrets.json";
    std::ofstream(secrets_file) << json::array({{{"host", "localhost"},
                                                 {"port", secret_port},
                                                 {"headers", {{"Authorization", kSecret}}}}});
    std::filesystem::permissions(
        secrets_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    audit_path_ = (dir_ / "audit.jsonl").string();
    proxy_ = std::make_unique<sidecar::EgressProxy>(
        config_, std::make_shared<const policy::EgressPolicy>(policy::loadEgressRules(rules, "t")),
        sidecar::AuditLog::open(audit_path_),
        std::make_shared<const sidecar::SecretHeaders>(
            sidecar::SecretHeaders::load(secrets_file.string())));
    proxy_->start();
  }

  // The audit lines so far, waiting briefly for `count`.
  std::vector<json> audit(std::size_t count) {
    return sidecar_test::waitForAuditLines(audit_path_, count);
  }

  [[nodiscard]] std::filesystem::path runDir() const { return dir_ / "run"; }

  std::filesystem::path dir_;
  std::unique_ptr<SessionCa> upstream_ca_;
  std::string upstream_ca_file_;
  std::string audit_path_;
  sidecar::SidecarConfig config_;
  std::unique_ptr<sidecar::EgressProxy> proxy_;
};

TEST_F(EgressSecretsTest, CaFilesAreWrittenAtStartAndRemovedAtStop) {
  start({4431}, 4431);
  const auto ca_file = runDir() / sidecar::kEgressCaFileName;
  const auto bundle_file = runDir() / sidecar::kCaBundleFileName;
  ASSERT_TRUE(std::filesystem::exists(ca_file));
  ASSERT_TRUE(std::filesystem::exists(bundle_file));
  for (const auto& file : {ca_file, bundle_file}) {
    struct stat info {};
    ASSERT_EQ(::stat(file.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0644U) << file;
  }
  const std::string ca = readFile(ca_file);
  EXPECT_TRUE(ca.starts_with("-----BEGIN CERTIFICATE-----")) << ca;
  EXPECT_EQ(ca.find("BEGIN CERTIFICATE", 12), std::string::npos);  // one certificate
  const std::string bundle = readFile(bundle_file);
  EXPECT_TRUE(bundle.ends_with(ca));
  const std::string system = sidecar::findSystemCaBundle();
  if (!system.empty()) {
    EXPECT_TRUE(bundle.starts_with(readFile(system)));
    EXPECT_GT(bundle.size(), ca.size());
  }
  // No key anywhere the sandbox can see, and no temporary file left behind.
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(runDir())) {
    ++files;
    EXPECT_EQ(readFile(entry.path()).find("PRIVATE KEY"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(files, 3U);  // the socket and the two files
  proxy_->stop();
  EXPECT_FALSE(std::filesystem::exists(ca_file));
  EXPECT_FALSE(std::filesystem::exists(bundle_file));
}

TEST_F(EgressSecretsTest, WithoutSecretsNoCaFileIsWritten) {
  proxy_ = std::make_unique<sidecar::EgressProxy>(
      config_,
      std::make_shared<const policy::EgressPolicy>(
          policy::loadEgressRules(json::array({"localhost:4431"}), "t")),
      sidecar::AuditLog::open((dir_ / "audit.jsonl").string()));
  proxy_->start();
  EXPECT_FALSE(std::filesystem::exists(runDir() / sidecar::kEgressCaFileName));
  EXPECT_FALSE(std::filesystem::exists(runDir() / sidecar::kCaBundleFileName));
}

// The session CA's name constraints permit the secret host only: a certificate for another name
// breaks them (checked with OpenSSL's own constraint check; the CA's key stays in the proxy).
TEST_F(EgressSecretsTest, TheSessionCaPermitsTheSecretHostsOnly) {
  start({4431}, 4431);
  const std::string pem = readFile(runDir() / sidecar::kEgressCaFileName);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), -1), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> ca(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  ASSERT_TRUE(ca);
  int critical = 0;
  std::unique_ptr<NAME_CONSTRAINTS, decltype(&NAME_CONSTRAINTS_free)> constraints(
      static_cast<NAME_CONSTRAINTS*>(
          X509_get_ext_d2i(ca.get(), NID_name_constraints, &critical, nullptr)),
      NAME_CONSTRAINTS_free);
  ASSERT_TRUE(constraints);
  EXPECT_EQ(critical, 1);
  const auto check = [&](const std::string& host) {
    const auto leaf = upstream_ca_->leafFor(host);
    X509_check_purpose(leaf.get(), -1, 0);  // fills the cached subjectAltName the check reads
    return NAME_CONSTRAINTS_check(leaf.get(), constraints.get());
  };
  EXPECT_EQ(check("localhost"), X509_V_OK);
  EXPECT_EQ(check("other.example"), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(check("127.0.0.1"), X509_V_ERR_EXCLUDED_VIOLATION);
}

}  // namespace

namespace {

TEST_F(EgressSecretsTest, ASecretHostIsInterceptedAndItsRequestsGetTheSecretValue) {
  HttpsEcho upstream(*upstream_ca_);
  start({upstream.port()}, upstream.port());
  // As SSL_CERT_FILE (the bundle), then as NODE_EXTRA_CA_CERTS (the session CA alone).
  for (const char* trusted : {sidecar::kCaBundleFileName, sidecar::kEgressCaFileName}) {
    TlsThroughProxy client(config_.egress_listen_path, upstream.port(), runDir() / trusted);
    EXPECT_EQ(client.connectAnswer(), "HTTP/1.1 200 Connection established\r\n\r\n");
    ASSERT_FALSE(client.handshakeError()) << trusted << ": " << client.handshakeError().message();
    EXPECT_EQ(client.issuer(), "sandbox-mcp session s-secrets");
    for (const char* target : {"/one", "/two"}) {
      const auto answer = client.get(target);
      EXPECT_EQ(answer.result_int(), 200U);
      const auto seen = json::parse(answer.body());
      EXPECT_EQ(seen["target"], target);
      EXPECT_EQ(headerValues(seen, "authorization"), std::vector<std::string>{kSecret});
    }
  }
  EXPECT_EQ(upstream.requests().size(), 4U);
  const auto lines = audit(2);
  ASSERT_EQ(lines.size(), 2U);
  for (const auto& line : lines) {
    EXPECT_EQ(line["kind"], "egress");
    EXPECT_EQ(line["method"], "CONNECT");
    EXPECT_EQ(line["decision"], "allow") << line.dump();
    EXPECT_EQ(line["status"], 200);
    EXPECT_NE(
        line["reason"].get<std::string>().find("; 2 request(s), secret headers set: Authorization"),
        std::string::npos)
        << line.dump();
    EXPECT_GT(line["up"].get<std::uint64_t>(), 0U);
    EXPECT_GT(line["bytes"].get<std::uint64_t>(), 0U);
  }
  EXPECT_EQ(readFile(audit_path_).find("sekrit"), std::string::npos);
}

// A request the interception refuses (here TRACE, whose answer would echo the secret) makes the
// connection's audit line a refusal, which the tool result's warnings then list.
TEST_F(EgressSecretsTest, ARequestRefusedInsideTheTunnelIsRecordedAsARefusal) {
  HttpsEcho upstream(*upstream_ca_);
  start({upstream.port()}, upstream.port());
  {
    TlsThroughProxy client(config_.egress_listen_path, upstream.port(),
                           runDir() / sidecar::kCaBundleFileName);
    ASSERT_FALSE(client.handshakeError()) << client.handshakeError().message();
    EXPECT_EQ(client.get("/one").result_int(), 200U);
    EXPECT_EQ(client.get("/echo-me", http::verb::trace).result_int(), 403U);
  }
  EXPECT_EQ(upstream.requests().size(), 1U);
  const auto lines = audit(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "deny") << lines[0].dump();
  EXPECT_EQ(lines[0]["status"], 403) << lines[0].dump();
  const auto reason = lines[0]["reason"].get<std::string>();
  EXPECT_NE(reason.find("1 request(s), secret headers set: Authorization; refused inside the "
                        "tunnel: TRACE is not relayed"),
            std::string::npos)
      << reason;
}

TEST_F(EgressSecretsTest, AHostWithoutSecretsPassesTlsThroughUnopened) {
  HttpsEcho secret_upstream(*upstream_ca_);
  HttpsEcho plain_upstream(*upstream_ca_);
  start({secret_upstream.port(), plain_upstream.port()}, secret_upstream.port());
  {
    // The upstream's own certificate, from the test CA: the proxy did not end this TLS.
    TlsThroughProxy client(config_.egress_listen_path, plain_upstream.port(), upstream_ca_file_);
    ASSERT_FALSE(client.handshakeError()) << client.handshakeError().message();
    EXPECT_EQ(client.issuer(), "upstream test CA");
    const auto seen = json::parse(client.get("/plain").body());
    EXPECT_EQ(headerValues(seen, "authorization"), std::vector<std::string>{"fake"});
  }
  {
    // The session CA does not vouch for it either.
    TlsThroughProxy client(config_.egress_listen_path, plain_upstream.port(),
                           runDir() / sidecar::kEgressCaFileName);
    EXPECT_TRUE(client.handshakeError()) << client.issuer() << " " << client.connectAnswer();
  }
  EXPECT_TRUE(secret_upstream.requests().empty());
  const auto lines = audit(2);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0]["decision"], "allow") << lines[0].dump();
  EXPECT_EQ(lines[0]["reason"].get<std::string>().find("secret headers"), std::string::npos);
}

TEST_F(EgressSecretsTest, AnInterceptedConnectionEndsAtTheMaxConnectionTime) {
  HttpsEcho upstream(*upstream_ca_);
  config_.egress_max_connection_ms = 300;
  start({upstream.port()}, upstream.port());
  TlsThroughProxy client(config_.egress_listen_path, upstream.port(),
                         runDir() / sidecar::kCaBundleFileName);
  ASSERT_FALSE(client.handshakeError()) << client.handshakeError().message();
  EXPECT_EQ(client.get("/one").result_int(), 200U);
  const auto lines = audit(1);  // the client stays, silent: the proxy ends it
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "error") << lines[0].dump();
  EXPECT_TRUE(lines[0]["reason"].get<std::string>().ends_with(
      "1 request(s), secret headers set: Authorization; the connection ended: time"))
      << lines[0].dump();
}

TEST_F(EgressSecretsTest, AnInterceptedConnectionStopsAtTheSessionByteBudget) {
  HttpsEcho upstream(*upstream_ca_);
  config_.egress_max_bytes = 200000;
  start({upstream.port()}, upstream.port());
  {
    TlsThroughProxy client(config_.egress_listen_path, upstream.port(),
                           runDir() / sidecar::kCaBundleFileName);
    ASSERT_FALSE(client.handshakeError()) << client.handshakeError().message();
    EXPECT_ANY_THROW((void)client.get("/big"));  // cut before the whole answer
  }
  const auto lines = audit(1);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["decision"], "error") << lines[0].dump();
  EXPECT_TRUE(lines[0]["reason"].get<std::string>().ends_with("the connection ended: limit"))
      << lines[0].dump();
  // Body bytes are charged before they are relayed; the framing of a chunked answer (a chunk's
  // size line) is charged as it is written, so the total may pass the budget by that much.
  EXPECT_LE(lines[0]["bytes"].get<std::uint64_t>() + lines[0]["up"].get<std::uint64_t>(),
            200000U + 64U);
  TlsThroughProxy next(config_.egress_listen_path, upstream.port(),
                       runDir() / sidecar::kCaBundleFileName);
  EXPECT_TRUE(next.connectAnswer().starts_with("HTTP/1.1 403")) << next.connectAnswer();
}

}  // namespace
