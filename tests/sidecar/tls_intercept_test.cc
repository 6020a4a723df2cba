// TLS interception (sidecar/tls_intercept.h) in-process. The upstream is an HTTPS server on
// 127.0.0.1 with a certificate from a CA made here (passed as the extra upstream CA), echoing
// each request it gets. The sandbox is the test, on one end of a Unix socket pair, trusting the
// session CA: it writes its ClientHello, which the test reads first (as the egress proxy does)
// and hands to the interceptor with the other end. Checked: the configured secret headers
// replace the sandbox's, Proxy-* and Host are rewritten, keep-alive requests (a chunked POST
// body, a large chunked answer, HEAD) pass intact, ALPN is http/1.1; an upstream whose
// certificate is not trusted or names another host gets 502 and no request; a request naming
// another target inside the tunnel gets 400, and so does a request whose framing an upstream could
// read otherwise (nothing goes up); no log line, result or answer holds a secret value.
#include "sidecar/tls_intercept.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/text.h"
#include "https_echo.h"
#include "sidecar/session_ca.h"
#include "sidecar/sidecar_log.h"
#include "sidecar/tls_client_hello.h"

namespace {

using sidecar_test::HttpsEcho;
using sidecar_test::pattern;

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using json = nlohmann::json;
using sidecar::SessionCa;

constexpr const char* kSecret = "Bearer sekrit-0123456789";
constexpr const char* kOtherSecret = "key-9876543210";

std::unique_ptr<SessionCa> newCa(const std::string& name) {
  const auto pem = SessionCa::generateCa(name);
  return SessionCa::fromPem(pem.cert_pem, pem.key_pem);
}

using ClientStream = ssl::stream<net::local::stream_protocol::socket>;

// What the sandbox does over its TLS connection, on its own thread.
using ClientScript = std::function<void(ClientStream&)>;

class TlsInterceptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tls-intercept-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    upstream_ca_ = newCa("upstream test CA");
    upstream_ca_file_ = (dir_ / "upstream-ca.pem").string();
    std::ofstream(upstream_ca_file_) << sidecar::certificatePem(upstream_ca_->certificate());
    const auto session = SessionCa::generateCa("session CA", {"api.test"});
    session_ca_pem_ = session.cert_pem;
    session_ca_ = SessionCa::fromPem(session.cert_pem, session.key_pem);
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_lines_);
    sidecar::log().sinks().push_back(sink_);
    level_ = sidecar::log().level();
    sidecar::log().set_level(spdlog::level::trace);
  }
  void TearDown() override {
    auto& sinks = sidecar::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    sidecar::log().set_level(level_);
    const std::string logged = log_lines_.str();
    EXPECT_EQ(logged.find("sekrit"), std::string::npos) << logged;
    EXPECT_EQ(logged.find(kOtherSecret), std::string::npos) << logged;
    std::filesystem::remove_all(dir_);
  }

  std::shared_ptr<sidecar::InterceptTls> tls(bool trust_upstream = true) {
    return std::make_shared<sidecar::InterceptTls>(std::shared_ptr<SessionCa>(session_ca_),
                                                   trust_upstream ? upstream_ca_file_ : "");
  }

  // Runs one intercepted tunnel to `upstream` (as "api.test") with the secret headers while
  // `script` plays the sandbox; returns once both ended.
  sidecar::InterceptResult run(std::uint16_t upstream_port,
                               std::shared_ptr<sidecar::InterceptTls> tls,
                               const ClientScript& script,
                               const std::vector<std::string>& alpn = {"h2", "http/1.1"}) {
    net::io_context io;
    net::io_context client_io;
    net::local::stream_protocol::socket client(client_io);
    net::local::stream_protocol::socket sandbox(io);
    net::local::connect_pair(client, sandbox);
    timeval timeout{10, 0};
    ::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::thread sandbox_thread([&] { playSandbox(std::move(client), script, alpn); });
    const std::string hello = readHello(sandbox);
    net::ip::tcp::socket upstream(io);
    upstream.connect({net::ip::make_address("127.0.0.1"), upstream_port});
    sidecar::InterceptResult result;
    bool done = false;
    sidecar::InterceptLimits limits;
    limits.idle = std::chrono::seconds(5);
    sidecar::startIntercept(sidecar::TunnelSocket(std::move(sandbox)), hello,
                            sidecar::TunnelSocket(std::move(upstream)), {"api.test", upstream_port},
                            {{"Authorization", kSecret}, {"X-Api-Key", kOtherSecret}},
                            std::move(tls), limits, [&](const sidecar::InterceptResult& r) {
                              result = r;
                              done = true;
                            });
    io.run();
    sandbox_thread.join();
    EXPECT_TRUE(done);
    EXPECT_EQ(result.end.find("sekrit"), std::string::npos) << result.end;
    return result;
  }

  // The first TLS record, read as the egress proxy reads it before deciding.
  static std::string readHello(net::local::stream_protocol::socket& socket) {
    std::string hello;
    std::array<char, 4096> chunk{};
    while (sidecar::scanClientHello(hello).status == sidecar::ClientHelloScan::Status::kNeedMore) {
      boost::system::error_code ec;
      const std::size_t n = socket.read_some(net::buffer(chunk), ec);
      if (ec) break;
      hello.append(chunk.data(), n);
    }
    return hello;
  }

  void playSandbox(net::local::stream_protocol::socket socket, const ClientScript& script,
                   const std::vector<std::string>& alpn) {
    ssl::context context(ssl::context::tls_client);
    context.add_certificate_authority(net::buffer(session_ca_pem_));
    context.set_verify_mode(ssl::verify_peer);
    std::string protocols;
    for (const auto& name : alpn) protocols += static_cast<char>(name.size()) + name;
    SSL_CTX_set_alpn_protos(context.native_handle(),
                            reinterpret_cast<const unsigned char*>(protocols.data()),
                            static_cast<unsigned>(protocols.size()));
    ClientStream stream(std::move(socket), context);
    SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>("api.test"));
    SSL_set1_host(stream.native_handle(), "api.test");
    boost::system::error_code ec;
    stream.handshake(ssl::stream_base::client, ec);
    ASSERT_FALSE(ec) << "the sandbox's handshake: " << ec.message();
    const unsigned char* chosen = nullptr;
    unsigned chosen_length = 0;
    SSL_get0_alpn_selected(stream.native_handle(), &chosen, &chosen_length);
    alpn_ = std::string(reinterpret_cast<const char*>(chosen), chosen_length);
    try {
      script(stream);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "the sandbox's script: " << error.what();
    }
    stream.lowest_layer().shutdown(net::socket_base::shutdown_both, ec);
  }

  static http::response<http::string_body> exchange(ClientStream& stream,
                                                    http::request<http::string_body>& request,
                                                    boost::beast::flat_buffer& buffer) {
    http::write(stream, request);
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    return response;  // NOLINT(clang-analyzer-cplusplus.Move): http::read moves it back
  }

  // The values of header `name` in an echoed request.
  static std::vector<std::string> headerValues(const json& seen, const std::string& name) {
    std::vector<std::string> values;
    for (const auto& field : seen["headers"]) {
      if (common::iequals(field[0].get<std::string>(), name)) values.push_back(field[1]);
    }
    return values;
  }

  std::filesystem::path dir_;
  std::unique_ptr<SessionCa> upstream_ca_;
  std::string upstream_ca_file_;
  std::string session_ca_pem_;
  std::shared_ptr<SessionCa> session_ca_;
  std::ostringstream log_lines_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum level_ = spdlog::level::info;
  std::string alpn_;
};

TEST_F(TlsInterceptTest, SetsTheSecretHeadersOnKeepAliveRequests) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  const std::string body = pattern(std::size_t{100} * 1024);
  std::vector<http::response<http::string_body>> answers;
  const auto result = run(upstream.port(), tls(), [&](ClientStream& stream) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/first?x=1", 11};
    get.set(http::field::host, "evil.example");
    get.insert(http::field::authorization, "Bearer fake-from-the-sandbox");
    get.insert("authorization", "Basic second-fake");
    get.set("x-api-key", "sandbox key");
    get.set(http::field::proxy_authorization, "Basic proxy");
    get.set("Proxy-Foo", "1");
    get.set("X-Kept", "kept");
    answers.push_back(exchange(stream, get, buffer));
    http::request<http::string_body> post{http::verb::post, "/second", 11};
    post.set(http::field::authorization, "Bearer fake-from-the-sandbox");
    post.body() = body;
    post.chunked(true);
    answers.push_back(exchange(stream, post, buffer));
    http::request<http::string_body> big{http::verb::get, "/big", 11};
    answers.push_back(exchange(stream, big, buffer));
    http::request<http::string_body> head{http::verb::head, "/first", 11};
    http::write(stream, head);
    http::response_parser<http::empty_body> head_parser;
    head_parser.skip(true);
    http::read(stream, buffer, head_parser);
    EXPECT_EQ(head_parser.get()[http::field::content_length], "1234");
    http::request<http::string_body> last{http::verb::get, "/last", 11};
    answers.push_back(exchange(stream, last, buffer));
  });

  EXPECT_EQ(alpn_, "http/1.1");
  ASSERT_EQ(answers.size(), 4U);
  for (const auto& answer : answers) EXPECT_EQ(answer.result_int(), 200U);
  EXPECT_EQ(answers[2].body(), pattern(HttpsEcho::kBigBody));
  const auto seen = upstream.requests();
  ASSERT_EQ(seen.size(), 5U);
  const std::string host = "api.test:" + std::to_string(upstream.port());
  for (const auto& request : seen) {
    EXPECT_EQ(headerValues(request, "authorization"), std::vector<std::string>{kSecret});
    EXPECT_EQ(headerValues(request, "x-api-key"), std::vector<std::string>{kOtherSecret});
    EXPECT_EQ(headerValues(request, "host"), std::vector<std::string>{host});
    EXPECT_TRUE(headerValues(request, "proxy-authorization").empty());
    EXPECT_TRUE(headerValues(request, "proxy-foo").empty());
  }
  EXPECT_EQ(seen[0]["target"], "/first?x=1");
  EXPECT_EQ(headerValues(seen[0], "x-kept"), std::vector<std::string>{"kept"});
  EXPECT_EQ(seen[1]["method"], "POST");
  EXPECT_EQ(headerValues(seen[1], "transfer-encoding"), std::vector<std::string>{"chunked"});
  EXPECT_EQ(seen[1]["body"].get<std::string>(), body);
  EXPECT_EQ(seen[3]["method"], "HEAD");
  EXPECT_EQ(json::parse(answers[3].body())["target"], "/last");
  EXPECT_EQ(result.requests, 5U);
  EXPECT_EQ(result.status, 200U);
  EXPECT_EQ(result.end, "closed");
  EXPECT_GT(result.up, body.size());
  EXPECT_GT(result.down, HttpsEcho::kBigBody);
  // The sandbox's own answers never carry the secret either (the echo is the upstream's).
  EXPECT_EQ(answers[2].body().find("sekrit"), std::string::npos);
  EXPECT_NE(log_lines_.str().find("egress intercept api.test"), std::string::npos)
      << "expected debug lines to check for secrets";
}

TEST_F(TlsInterceptTest, AnUpstreamClosingItsIdleConnectionClosesTheSandboxsToo) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  boost::system::error_code next_ec;
  std::chrono::steady_clock::duration waited{};
  const auto result = run(upstream.port(), tls(), [&](ClientStream& stream) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/then-close", 11};
    const auto answer = exchange(stream, get, buffer);
    EXPECT_EQ(answer.result_int(), 200U);
    EXPECT_TRUE(answer.keep_alive());
    // The client keeps the connection for its next request; it must learn that it is gone
    // (as urllib3, curl and Node check a pooled connection) rather than read a 502 later.
    const auto start = std::chrono::steady_clock::now();
    http::response<http::string_body> nothing;
    http::read(stream, buffer, nothing, next_ec);
    waited = std::chrono::steady_clock::now() - start;
  });
  EXPECT_TRUE(next_ec == http::error::end_of_stream || next_ec == net::error::eof ||
              next_ec == ssl::error::stream_truncated)
      << next_ec.message();
  EXPECT_LT(waited, std::chrono::seconds(4)) << "the sandbox waited for its read timeout";
  EXPECT_EQ(result.requests, 1U);
  EXPECT_EQ(result.end, "closed");
  EXPECT_EQ(upstream.requests().size(), 1U);
}

TEST_F(TlsInterceptTest, UntrustedUpstreamCertificateGets502) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  const auto result = run(upstream.port(), tls(/*trust_upstream=*/false), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/first", 11};
    answer = exchange(s, get, buffer);
  });
  EXPECT_EQ(answer.result_int(), 502U);
  EXPECT_NE(answer.reason().find("certificate was refused"), std::string::npos) << answer.reason();
  EXPECT_NE(answer.body().find("unable to get local issuer certificate"), std::string::npos)
      << answer.body();
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_EQ(result.status, 502U);
  EXPECT_EQ(result.requests, 0U);
  EXPECT_NE(result.end.find("certificate was refused"), std::string::npos) << result.end;
}

TEST_F(TlsInterceptTest, UpstreamCertificateForAnotherHostGets502) {
  HttpsEcho upstream(*upstream_ca_, "other.test");
  http::response<http::string_body> answer;
  (void)run(upstream.port(), tls(), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/first", 11};
    answer = exchange(s, get, buffer);
  });
  EXPECT_EQ(answer.result_int(), 502U);
  EXPECT_NE(answer.body().find("hostname mismatch"), std::string::npos) << answer.body();
  EXPECT_TRUE(upstream.requests().empty());
}

TEST_F(TlsInterceptTest, RequestForAnotherTargetInsideTheTunnelGets400) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  const auto result = run(upstream.port(), tls(), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "https://evil.test/steal", 11};
    answer = exchange(s, get, buffer);
  });
  EXPECT_EQ(answer.result_int(), 400U);
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_EQ(result.status, 400U);
}

TEST_F(TlsInterceptTest, OversizedRequestHeadGets431) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  const auto result = run(upstream.port(), tls(), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/first", 11};
    get.set("X-Big", std::string(std::size_t{20} * 1024, 'x'));
    answer = exchange(s, get, buffer);
  });
  EXPECT_EQ(answer.result_int(), 431U);
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_NE(result.end.find("larger than"), std::string::npos) << result.end;  // not "closed"
}

TEST_F(TlsInterceptTest, TraceIsRefusedItWouldEchoTheSecretHeaders) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  const auto result = run(upstream.port(), tls(), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> trace{http::verb::trace, "/", 11};
    answer = exchange(s, trace, buffer);
  });
  EXPECT_EQ(answer.result_int(), 403U);
  EXPECT_NE(answer.body().find("would echo"), std::string::npos) << answer.body();
  EXPECT_EQ(answer.body().find("sekrit"), std::string::npos);
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_NE(result.end.find("TRACE"), std::string::npos) << result.end;
}

// Beast frames this POST as bodiless; an upstream that reads its codings otherwise would take the
// next request on the connection, written with the secrets, as its body (and might echo it).
TEST_F(TlsInterceptTest, AmbiguousTransferEncodingGets400AndNothingGoesUp) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  const auto result = run(upstream.port(), tls(), [&](ClientStream& s) {
    const std::string requests =
        "POST /store HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n"
        "GET /next HTTP/1.1\r\nHost: api.test\r\n\r\n";
    net::write(s, net::buffer(requests));
    boost::beast::flat_buffer buffer;
    http::read(s, buffer, answer);
  });
  EXPECT_EQ(answer.result_int(), 400U);
  EXPECT_NE(answer.body().find("Transfer-Encoding"), std::string::npos) << answer.body();
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_EQ(result.status, 400U);
  EXPECT_EQ(result.requests, 0U);
  EXPECT_NE(result.end.find("Transfer-Encoding"), std::string::npos) << result.end;
}

TEST_F(TlsInterceptTest, WithoutHttp11InAlpnNoProtocolIsSelected) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  http::response<http::string_body> answer;
  (void)run(upstream.port(), tls(),
            [&](ClientStream& s) {
              boost::beast::flat_buffer buffer;
              http::request<http::string_body> get{http::verb::get, "/first", 11};
              answer = exchange(s, get, buffer);
            },
            {"h2"});
  EXPECT_EQ(alpn_, "");
  EXPECT_EQ(answer.result_int(), 200U);
}

// TearDown checks every test's log lines; this one makes sure there are some, from a request
// that was relayed and one that was refused, with debug logging on.
TEST_F(TlsInterceptTest, NoLogLineHoldsASecretValue) {
  HttpsEcho upstream(*upstream_ca_, "api.test");
  (void)run(upstream.port(), tls(), [&](ClientStream& s) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> get{http::verb::get, "/first", 11};
    (void)exchange(s, get, buffer);
    http::request<http::string_body> bad{http::verb::get, "http://api.test/", 11};
    (void)exchange(s, bad, buffer);
  });
  const std::string logged = log_lines_.str();
  EXPECT_NE(logged.find("GET request 1"), std::string::npos) << logged;
  EXPECT_NE(logged.find("not another target"), std::string::npos) << logged;
  EXPECT_EQ(logged.find("sekrit"), std::string::npos) << logged;
  EXPECT_EQ(logged.find(kOtherSecret), std::string::npos) << logged;
}

}  // namespace
