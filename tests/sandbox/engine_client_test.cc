#include "sandbox/docker/engine_client.h"

#include <gtest/gtest.h>

#include <chrono>

#include "fake_engine.h"
#include "sandbox/docker/attach_stream.h"

namespace {

using sandbox::docker::AttachStream;
using sandbox::docker::EngineClient;
using sandbox::docker::EngineClientOptions;
using sandbox::docker::EngineError;
using sandbox::docker::Method;
using sandbox::testing::FakeEngine;
using sandbox::testing::FakeReply;
using sandbox::testing::FakeRequest;
using namespace std::chrono_literals;

std::string socketPath(const char* name) {
  return ::testing::TempDir() + "engine-" + name + "-" + std::to_string(::getpid()) + ".sock";
}

EngineClientOptions optionsFor(const std::string& path) {
  EngineClientOptions options;
  options.endpoint = common::EngineHost::unixSocket(path);
  options.request_timeout = 2s;
  return options;
}

TEST(EngineClient, SendsVersionedPathsAndParsesJson) {
  std::string seen;
  FakeEngine engine(socketPath("ok"), [&](const FakeRequest& request) {
    seen = request.head + "|" + request.body;
    return FakeReply{FakeEngine::reply(201, "Created", R"({"Id":"abc"})")};
  });
  EngineClient client(optionsFor(socketPath("ok")));
  const auto reply =
      client.request(Method::kPost, "/containers/create?name=x", nlohmann::json{{"Image", "i"}});
  EXPECT_EQ(reply.status, 201);
  EXPECT_EQ(reply.json().at("Id"), "abc");
  EXPECT_EQ(seen.rfind("POST /v1.41/containers/create?name=x HTTP/1.1", 0), 0U) << seen;
  EXPECT_NE(seen.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(seen.find(R"(|{"Image":"i"})"), std::string::npos);
}

TEST(EngineClient, TurnsEngineErrorBodiesIntoTypedErrorsWithAdvice) {
  FakeEngine engine(socketPath("err"), [](const FakeRequest&) {
    return FakeReply{
        FakeEngine::reply(404, "Not Found", R"({"message":"No such image: nope:latest"})")};
  });
  EngineClient client(optionsFor(socketPath("err")));
  try {
    (void)client.request(Method::kGet, "/images/nope:latest/json");
    FAIL() << "expected EngineError";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_TRUE(e.isNotFound());
    EXPECT_EQ(e.message(), "No such image: nope:latest");
    EXPECT_NE(std::string(e.what()).find("docker/build-images.sh"), std::string::npos) << e.what();
  }
}

TEST(EngineClient, ExplainsAMissingSocket) {
  EngineClient client(optionsFor(socketPath("missing")));
  try {
    (void)client.request(Method::kGet, "/version");
    FAIL() << "expected EngineError";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), 0);
    EXPECT_NE(std::string(e.what()).find("is dockerd running? start it with scripts/setup.sh"),
              std::string::npos)
        << e.what();
  }
}

TEST(EngineClient, CountsFailuresThatAreTheEnginesNotTheCallers) {
  FakeEngine engine(socketPath("counts"), [](const FakeRequest& request) {
    if (request.head.find("/boom") != std::string::npos) {
      return FakeReply{FakeEngine::reply(500, "Internal Server Error", R"({"message":"disk"})"),
                       /*close_after=*/true};
    }
    return FakeReply{FakeEngine::reply(404, "Not Found", R"({"message":"No such container"})"),
                     /*close_after=*/true};
  });
  EngineClient client(optionsFor(socketPath("counts")));
  EXPECT_THROW((void)client.request(Method::kGet, "/containers/x/json"), EngineError);  // 404
  EXPECT_THROW((void)client.request(Method::kGet, "/boom"), EngineError);               // 500
  EXPECT_THROW((void)client.upgrade(Method::kPost, "/boom/attach"), EngineError);       // 500
  EXPECT_EQ(client.failures().server, 2U);
  EXPECT_EQ(client.failures().transport, 0U);

  EngineClient unreachable(optionsFor(socketPath("nobody-here")));
  EXPECT_THROW((void)unreachable.request(Method::kGet, "/version"), EngineError);
  EXPECT_THROW((void)unreachable.upgrade(Method::kPost, "/containers/x/attach"), EngineError);
  EXPECT_EQ(unreachable.failures().transport, 2U);
  EXPECT_EQ(unreachable.failures().server, 0U);
}

TEST(EngineClient, ReusesKeepAliveConnections) {
  FakeEngine engine(socketPath("reuse"), [](const FakeRequest&) {
    return FakeReply{FakeEngine::reply(200, "OK", "{}")};
  });
  EngineClient client(optionsFor(socketPath("reuse")));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.request(Method::kGet, "/info").status, 200);
  EXPECT_EQ(engine.connections(), 1);
  EXPECT_EQ(engine.requests(), 5);
}

TEST(EngineClient, RetriesOnceWhenAnIdleConnectionWasClosed) {
  // The server promises keep-alive but hangs up after each reply, like an idle timeout would.
  FakeEngine engine(socketPath("stale"), [](const FakeRequest&) {
    return FakeReply{FakeEngine::reply(200, "OK", "{}"), /*close_after=*/true};
  });
  EngineClient client(optionsFor(socketPath("stale")));
  EXPECT_EQ(client.request(Method::kGet, "/info").status, 200);
  EXPECT_EQ(client.request(Method::kGet, "/info").status, 200);
  EXPECT_EQ(engine.connections(), 2);
  EXPECT_EQ(engine.requests(), 2);
}

TEST(EngineClient, TimesOutWhenTheEngineDoesNotAnswer) {
  FakeEngine engine(socketPath("slow"), [](const FakeRequest&) {
    FakeReply reply;
    reply.never_answer = true;
    return reply;
  });
  EngineClient client(optionsFor(socketPath("slow")));
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)client.request(Method::kGet, "/info", std::nullopt, 200ms);
    FAIL() << "expected EngineError";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), 0);
    EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // timed out, did not hang
}

std::string muxed(char stream, const std::string& payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  return std::string{stream,
                     0,
                     0,
                     0,
                     static_cast<char>(n >> 24U),
                     static_cast<char>(n >> 16U),
                     static_cast<char>(n >> 8U),
                     static_cast<char>(n)} +
         payload;
}

TEST(AttachStream, KeepsBytesThatArrivedWithThe101Reply) {
  // The engine may send stream bytes in the same segment as the 101 reply; the HTTP parser
  // buffers them and they must reach the stream, not vanish.
  FakeEngine engine(socketPath("attach"), [](const FakeRequest& request) {
    EXPECT_NE(request.head.find("Upgrade: tcp"), std::string::npos);
    EXPECT_NE(request.head.find("/attach?stream=1&stdin=1&stdout=1&stderr=1"), std::string::npos);
    return FakeReply{
        "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
        "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" +
            muxed(2, "sandbox-agent: starting\n") + muxed(1, "early"),
        /*close_after=*/true};
  });
  EngineClient client(optionsFor(socketPath("attach")));
  const auto raw =
      client.upgrade(Method::kPost, "/containers/c/attach?stream=1&stdin=1&stdout=1&stderr=1");
  EXPECT_FALSE(raw.buffered.empty()) << "the parser read nothing past the header";
  auto stream = AttachStream::open(client, "0123456789abcdef", 1s);
  std::string out;
  while (stream->read(out) > 0) {
  }
  EXPECT_EQ(out, "early");
  EXPECT_EQ(stream->stderrTail(), "sandbox-agent: starting\n");
}

TEST(AttachStream, ReportsARefusedAttachWithTheEngineMessage) {
  FakeEngine engine(socketPath("noattach"), [](const FakeRequest&) {
    return FakeReply{FakeEngine::reply(404, "Not Found", R"({"message":"No such container: x"})")};
  });
  EngineClient client(optionsFor(socketPath("noattach")));
  try {
    (void)AttachStream::open(client, "x", 1s);
    FAIL() << "expected EngineError";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.message(), "No such container: x");
  }
}

TEST(EngineAdvice, NamesTheFixForCommonFailures) {
  using sandbox::docker::engineAdvice;
  EXPECT_NE(
      engineAdvice(0, "connect: Connection refused", "GET /v1.41/info").find("scripts/setup.sh"),
      std::string::npos);
  EXPECT_NE(engineAdvice(0, "Permission denied", "GET /v1.41/info").find("docker"),
            std::string::npos);
  EXPECT_NE(engineAdvice(404, "No such image: a:b", "POST /v1.41/containers/create")
                .find("docker/build-images.sh"),
            std::string::npos);
  EXPECT_NE(engineAdvice(400, "Unknown runtime specified runsc", "POST /v1.41/containers/create")
                .find("daemon.json"),
            std::string::npos);
  EXPECT_NE(engineAdvice(404, "No such container: abc", "GET /v1.41/containers/abc/json")
                .find("new session"),
            std::string::npos);
  EXPECT_EQ(engineAdvice(304, "", "POST /v1.41/containers/x/start"), "");
}

TEST(EngineAdvice, ExtractsTheMessageOrFallsBackToTheBody) {
  using sandbox::docker::engineMessageFromBody;
  EXPECT_EQ(engineMessageFromBody(R"({"message":"conflict"})"), "conflict");
  EXPECT_EQ(engineMessageFromBody("page not found\n"), "page not found");
  EXPECT_EQ(engineMessageFromBody(""), "(empty reply)");
}

TEST(UrlEncode, EscapesEverythingButUnreserved) {
  EXPECT_EQ(sandbox::docker::urlEncode(R"({"label":["a=1"]})"),
            "%7B%22label%22%3A%5B%22a%3D1%22%5D%7D");
  EXPECT_EQ(sandbox::docker::urlEncode("Az09-_.~"), "Az09-_.~");
}

}  // namespace
