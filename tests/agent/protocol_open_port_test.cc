// The "open_port" op against the real sandbox-agent binary over pipes. The test plays both ends
// the agent connects: the server's preview socket (a Unix listener in a temporary directory,
// which must receive the token first) and the server sandbox code runs (a TCP listener on
// 127.0.0.1, port 0).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "agent_client.h"
#include "common/frame.h"
#include "egress_test_support.h"
#include "port_test_support.h"
#include "protocol_test_support.h"

namespace {

using agent_test::AgentClient;
using agent_test::contains;
using agent_test::json;
using agent_test::TempDir;
using egress_test::acceptOne;
using egress_test::randomBytes;
using egress_test::readExactly;
using egress_test::readToEof;
using egress_test::sendAll;
using egress_test::UniqueFd;
using egress_test::unixListener;
using port_test::kToken;
using port_test::TcpServer;
using namespace std::chrono_literals;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kMaxConnections = 256;  // the agent's limit (PROTOCOL.md)

json openPortRequest(std::int64_t id, std::uint16_t port, const std::string& path) {
  return {{"id", id}, {"op", "open_port"}, {"port", port}, {"path", path}, {"token", kToken}};
}

// One relayed connection as the test sees it: the server's end of the TCP connection, and the
// preview socket's end after the token.
struct Preview {
  UniqueFd sandbox;
  UniqueFd host;
};

// True when `fd` has something to read (or an EOF) within `timeout`.
bool readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// A running agent, a preview socket ("door") and a TCP server for it to connect.
class Harness {
 public:
  Harness()
      : agent_(dir_.path()), door_(unixListener(doorPath())), server_(port_test::tcpServer()) {}

  [[nodiscard]] AgentClient& agent() { return agent_; }
  [[nodiscard]] std::string doorPath() const { return (dir_.path() / "preview.sock").string(); }
  [[nodiscard]] std::uint16_t port() const { return server_.port; }
  [[nodiscard]] int door() const { return door_.get(); }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_.path(); }

  // Takes both ends of a connection the agent made, checking the token on the way.
  Preview accept() {
    Preview preview;
    preview.host = acceptOne(door_.get());
    const std::string token = readExactly(preview.host.get(), 33);
    if (token != std::string(kToken) + "\n") throw std::runtime_error("wrong token: " + token);
    preview.sandbox = acceptOne(server_.listener.get());
    return preview;
  }
  // Asks for a connection and takes both of its ends.
  Preview open(std::int64_t id) {
    const json reply = agent_.request(openPortRequest(id, server_.port, doorPath()));
    if (reply["ok"] != true) throw std::runtime_error("open_port failed: " + reply.dump());
    return accept();
  }

 private:
  TempDir dir_;
  AgentClient agent_;
  UniqueFd door_;
  TcpServer server_;
};

TEST(OpenPort, RelaysBytesBothWaysAfterTheToken) {
  Harness harness;
  const json reply =
      harness.agent().request(openPortRequest(1, harness.port(), harness.doorPath()));
  ASSERT_EQ(reply["ok"], true) << reply;
  EXPECT_EQ(reply["port"], harness.port());
  const Preview preview = harness.accept();

  sendAll(preview.host.get(), "GET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(readExactly(preview.sandbox.get(), 18), "GET / HTTP/1.0\r\n\r\n");
  sendAll(preview.sandbox.get(), "HTTP/1.0 200 OK\r\n\r\nhello");
  EXPECT_EQ(readExactly(preview.host.get(), 24), "HTTP/1.0 200 OK\r\n\r\nhello");
}

TEST(OpenPort, RelaysSeveralMiBEachWayIntact) {
  Harness harness;
  const Preview preview = harness.open(1);
  const std::string up = randomBytes(6 * kMiB, 1);    // browser → sandbox server
  const std::string down = randomBytes(6 * kMiB, 2);  // sandbox server → browser

  const auto [at_sandbox, at_host] =
      egress_test::exchange(preview.host.get(), up, preview.sandbox.get(), down);

  ASSERT_EQ(at_sandbox.size(), up.size());
  EXPECT_TRUE(at_sandbox == up) << "bytes changed on the way into the sandbox";
  ASSERT_EQ(at_host.size(), down.size());
  EXPECT_TRUE(at_host == down) << "bytes changed on the way out of the sandbox";
}

// Each side's EOF reaches the other while the opposite direction still flows; a half-closed
// connection costs the agent no CPU (the socket at EOF is no longer watched).
TEST(OpenPort, PassesHalfClosesOnBothWays) {
  Harness harness;
  const Preview preview = harness.open(1);

  sendAll(preview.sandbox.get(), "served, then the server's EOF");
  ::shutdown(preview.sandbox.get(), SHUT_WR);
  EXPECT_EQ(readToEof(preview.host.get()), "served, then the server's EOF");

  const long before = port_test::cpuTicks(harness.agent().pid());
  std::this_thread::sleep_for(400ms);
  EXPECT_LE(port_test::cpuTicks(harness.agent().pid()) - before, 5)
      << "the agent spins while the connection is half-closed";

  sendAll(preview.host.get(), "the browser still sends");
  ::shutdown(preview.host.get(), SHUT_WR);
  EXPECT_EQ(readToEof(preview.sandbox.get()), "the browser still sends");
}

TEST(OpenPort, PassesTheBrowsersHalfCloseOn) {
  Harness harness;
  const Preview preview = harness.open(1);

  sendAll(preview.host.get(), "request, then the browser's EOF");
  ::shutdown(preview.host.get(), SHUT_WR);
  EXPECT_EQ(readToEof(preview.sandbox.get()), "request, then the browser's EOF");
  sendAll(preview.sandbox.get(), "answered after the EOF");
  ::shutdown(preview.sandbox.get(), SHUT_WR);
  EXPECT_EQ(readToEof(preview.host.get()), "answered after the EOF");
}

TEST(OpenPort, SaysNothingListensOnARefusedPort) {
  Harness harness;
  const std::uint16_t port = egress_test::freeLoopbackPort();
  const json reply = harness.agent().request(openPortRequest(1, port, harness.doorPath()));
  ASSERT_EQ(reply["ok"], false) << reply;
  const std::string text = std::to_string(port);
  EXPECT_TRUE(contains(reply["error"], "nothing listens on 127.0.0.1:" + text + " in the sandbox"))
      << reply;
  EXPECT_TRUE(contains(reply["error"], "python3 -m http.server " + text)) << reply;
  EXPECT_FALSE(readable(harness.door(), 100ms)) << "nothing connects to the preview socket";
}

TEST(OpenPort, NamesTheErrorWhenThePreviewSocketIsMissing) {
  Harness harness;
  const std::string missing = (harness.dir() / "gone.sock").string();
  const json reply = harness.agent().request(openPortRequest(1, harness.port(), missing));
  ASSERT_EQ(reply["ok"], false) << reply;
  EXPECT_TRUE(contains(reply["error"], "No such file or directory")) << reply;
  EXPECT_TRUE(contains(reply["error"], missing)) << reply;
}

TEST(OpenPort, RejectsBadFieldsNamingThem) {
  struct Row {
    const char* name;
    json patch;  // merged into a valid request; null deletes the field
    const char* field;
  };
  const std::vector<Row> rows = {
      {"port zero", {{"port", 0}}, "\"port\""},
      {"port past 65535", {{"port", 70000}}, "\"port\""},
      {"negative port", {{"port", -1}}, "\"port\""},
      {"port as a string", {{"port", "8000"}}, "\"port\""},
      {"fractional port", {{"port", 80.5}}, "\"port\""},
      {"no port", {{"port", nullptr}}, "\"port\""},
      {"token of 31 digits", {{"token", std::string(kToken).substr(1)}}, "\"token\""},
      {"token in capitals", {{"token", "0123456789ABCDEF0123456789ABCDEF"}}, "\"token\""},
      {"token not hex", {{"token", std::string(32, 'g')}}, "\"token\""},
      {"no token", {{"token", nullptr}}, "\"token\""},
      {"relative path", {{"path", "preview.sock"}}, "\"path\""},
      {"path too long for sockaddr_un", {{"path", "/" + std::string(120, 'a')}}, "\"path\""},
      {"path with a NUL", {{"path", std::string("/tmp/a\0b", 8)}}, "\"path\""},
      {"no path", {{"path", nullptr}}, "\"path\""},
  };
  Harness harness;
  std::int64_t id = 1;
  for (const Row& row : rows) {
    json request = openPortRequest(id++, harness.port(), harness.doorPath());
    request.merge_patch(row.patch);
    const json reply = harness.agent().request(request);
    EXPECT_EQ(reply["ok"], false) << row.name << ": " << reply;
    EXPECT_TRUE(reply["error"].is_string() && contains(reply["error"], row.field))
        << row.name << ": " << reply;
  }
  EXPECT_FALSE(readable(harness.door(), 50ms)) << "a rejected request connects nothing";
}

TEST(OpenPort, IsAnsweredWhileAnExecRuns) {
  Harness harness;
  harness.agent().send(
      {{"id", 1}, {"op", "exec"}, {"kind", "shell"}, {"code", "sleep 1"}, {"timeout_ms", 10000}});
  std::this_thread::sleep_for(100ms);  // the exec has started
  const auto start = std::chrono::steady_clock::now();
  const Preview preview = harness.open(2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "open_port waited for the exec";
  sendAll(preview.host.get(), "ping");
  EXPECT_EQ(readExactly(preview.sandbox.get(), 4), "ping") << "and relays during it";
  const json exec = harness.agent().waitFor(1, 10s).final;
  EXPECT_EQ(exec["status"], "success") << exec;
}

// A server whose backlog is full leaves the connect in progress: the agent waits for it in its
// loop and serves other requests meanwhile.
TEST(OpenPort, OtherRequestsAreServedWhileAConnectWaits) {
  Harness harness;
  const TcpServer busy = port_test::tcpServer(/*backlog=*/0);
  const auto fillers = port_test::fillBacklog(busy.port);
  harness.agent().send(openPortRequest(1, busy.port, harness.doorPath()));
  const auto start = std::chrono::steady_clock::now();
  const json listed = harness.agent().request({{"id", 2}, {"op", "list_files"}});
  EXPECT_EQ(listed["ok"], true) << listed;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  const Preview preview = harness.open(3);  // another port, meanwhile
  sendAll(preview.host.get(), "ping");
  EXPECT_EQ(readExactly(preview.sandbox.get(), 4), "ping");
}

TEST(OpenPort, RefusesPastTheLimitUntilAConnectionEnds) {
  Harness harness;
  std::vector<Preview> previews;
  for (std::size_t i = 0; i < kMaxConnections; ++i) {
    previews.push_back(harness.open(static_cast<std::int64_t>(i + 1)));
  }
  const json refused =
      harness.agent().request(openPortRequest(1000, harness.port(), harness.doorPath()));
  ASSERT_EQ(refused["ok"], false) << refused;
  EXPECT_EQ(refused["error"],
            "too many preview connections are open in the sandbox (256); close some and retry");
  EXPECT_FALSE(readable(harness.door(), 50ms)) << "a refused request connects nothing";

  previews.front() = Preview{};  // both ends close: the agent ends that relay
  std::int64_t id = 2000;
  json retried;
  ASSERT_TRUE(egress_test::eventually([&] {
    retried = harness.agent().request(openPortRequest(id++, harness.port(), harness.doorPath()));
    return retried["ok"] == true;
  })) << retried;
  const Preview again = harness.accept();
  sendAll(again.host.get(), "a slot again");
  EXPECT_EQ(readExactly(again.sandbox.get(), 12), "a slot again");
}

// The frames on the server's channel socket (op "channel"), where "suspend" is served.
class ChannelPeer {
 public:
  ChannelPeer(AgentClient& agent, const std::string& path) : listener_(unixListener(path)) {
    const json reply =
        agent.request({{"id", 900}, {"op", "channel"}, {"path", path}, {"token", "t"}});
    if (reply["ok"] != true) throw std::runtime_error("channel failed: " + reply.dump());
    connection_ = acceptOne(listener_.get());
    (void)read();  // {"channel_token": "t"}
  }
  void send(const json& message) { sendAll(connection_.get(), frame::encode(message.dump())); }
  json read() {
    for (;;) {
      if (auto payload = decoder_.next()) return json::parse(*payload);
      if (!readable(connection_.get(), 10'000ms)) throw std::runtime_error("no frame");
      char buffer[65536];
      const ssize_t n = ::recv(connection_.get(), buffer, sizeof buffer, 0);
      if (n <= 0) throw std::runtime_error("the channel closed");
      decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }

 private:
  UniqueFd listener_;
  UniqueFd connection_;
  frame::Decoder decoder_;
};

// gVisor cannot checkpoint a sandbox connected to a host socket: "suspend" closes every relay
// (and answers a connect still in progress) before it answers.
TEST(OpenPort, SuspendClosesEveryPreviewFirst) {
  Harness harness;
  ChannelPeer channel(harness.agent(), (harness.dir() / "agent.sock").string());
  channel.send(openPortRequest(1, harness.port(), harness.doorPath()));
  const json opened = channel.read();
  ASSERT_EQ(opened["ok"], true) << opened;
  const Preview preview = harness.accept();
  sendAll(preview.host.get(), "ping");
  EXPECT_EQ(readExactly(preview.sandbox.get(), 4), "ping");

  const TcpServer busy = port_test::tcpServer(/*backlog=*/0);
  const auto fillers = port_test::fillBacklog(busy.port);
  channel.send(openPortRequest(2, busy.port, harness.doorPath()));
  channel.send({{"id", 3}, {"op", "suspend"}});
  const json pending = channel.read();
  EXPECT_EQ(pending["id"], 2) << pending;
  EXPECT_EQ(pending["ok"], false) << pending;
  EXPECT_TRUE(contains(pending["error"], "suspended")) << pending;
  const json suspended = channel.read();
  EXPECT_EQ(suspended["id"], 3) << suspended;
  EXPECT_EQ(suspended["ok"], true) << suspended;
  EXPECT_EQ(readToEof(preview.host.get()), "") << "the host side is closed";
  EXPECT_EQ(readToEof(preview.sandbox.get()), "") << "the sandbox side is closed";
}

}  // namespace
