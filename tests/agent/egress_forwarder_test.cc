// The forwarder process as PID 1 runs it: the --egress-proxy value, the fork, what the child
// keeps open, and the restart after it dies.
#include "agent/egress_forwarder.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "agent/event_loop.h"
#include "egress_test_support.h"

namespace {

using namespace egress_test;

TEST(EgressProxyOption, ParsesPortAndSocketPath) {
  const auto spec = agent::parseEgressProxy("3128=/run/mcp/egress.sock");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->port, 3128);
  EXPECT_EQ(spec->socket_path, "/run/mcp/egress.sock");
  EXPECT_EQ(agent::parseEgressProxy("1=/s")->port, 1);
  EXPECT_EQ(agent::parseEgressProxy("65535=/s")->port, 65535);
}

TEST(EgressProxyOption, RefusesMalformedValues) {
  const std::string too_long = "3128=/" + std::string(107, 'a');
  for (const std::string& value :
       {std::string(), std::string("3128"), std::string("=/run/s"), std::string("3128="),
        std::string("0=/run/s"), std::string("65536=/run/s"), std::string("-1=/run/s"),
        std::string("+80=/run/s"), std::string("80x=/run/s"), std::string("3128=run/s"),
        std::string(" 3128=/run/s"), too_long}) {
    EXPECT_FALSE(agent::parseEgressProxy(value).has_value()) << "'" << value << "'";
  }
}

// Runs `loop`, reaping children every 2 ms as the agent does on SIGCHLD, until `done` holds
// (or 10 s passed).
void runUntil(agent::EventLoop& loop, agent::Reaper& reaper, const std::function<bool()>& done) {
  const auto guard = loop.addTimer(std::chrono::seconds(10), [&loop] { loop.stop(); });
  std::function<void()> tick = [&] {
    reaper.reapAll();
    if (done()) {
      loop.stop();
      return;
    }
    loop.addTimer(std::chrono::milliseconds(2), tick);
  };
  loop.addTimer(std::chrono::milliseconds(2), tick);
  loop.run();
  loop.cancelTimer(guard);
}

TEST(EgressForwarder, RestartsTheForwarderAfterItDiesOnTheSamePort) {
  TempDir dir;
  const UniqueFd gateway = unixListener(dir.file("egress.sock"));
  agent::EventLoop loop;
  agent::Reaper reaper;
  agent::EgressForwarder forwarder(loop, reaper, {0, dir.file("egress.sock")},
                                   std::chrono::milliseconds(10));
  const pid_t first = forwarder.pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  runUntil(loop, reaper, [&] { return forwarder.pid() > 0 && forwarder.pid() != first; });
  const pid_t second = forwarder.pid();
  ASSERT_GT(second, 0) << "no new forwarder was started";
  ASSERT_NE(second, first);

  const UniqueFd client = connectTcp(forwarder.port());
  const UniqueFd upstream = acceptOne(gateway.get());
  sendAll(client.get(), "through the new one");
  EXPECT_EQ(readExactly(upstream.get(), 19), "through the new one");

  forwarder.stop();
  EXPECT_EQ(forwarder.pid(), -1);
  EXPECT_NE(::kill(second, 0), 0) << "stop() leaves the forwarder reaped";
}

TEST(EgressForwarder, TheForwarderKeepsNoInheritedDescriptor) {
  TempDir dir;
  agent::EventLoop loop;
  agent::Reaper reaper;
  int inherited[2];  // without close-on-exec, like a careless descriptor of the agent's
  ASSERT_EQ(::pipe(inherited), 0);
  const UniqueFd read_end(inherited[0]);
  agent::EgressForwarder forwarder(loop, reaper, {0, dir.file("egress.sock")});
  ::close(inherited[1]);
  // EOF only once no process holds the write end: the forwarder closed its copy.
  waitFor(read_end.get(), POLLIN);
  char byte = 0;
  EXPECT_EQ(::read(read_end.get(), &byte, 1), 0);
  // What it holds: stdin and stdout (/dev/null), stderr, the listener and its epoll.
  const std::string pid = std::to_string(forwarder.pid());
  EXPECT_TRUE(eventually([&] { return openFdCount(pid) == 5; }))
      << "the forwarder has " << openFdCount(pid) << " descriptors open";
}

}  // namespace
