#include "sandbox/agent_channel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/frame.h"
#include "fake_agent.h"

namespace {

using nlohmann::json;
using sandbox::AgentChannel;
using sandbox::ChannelClosedError;
using namespace std::chrono_literals;

using Pair = sandbox_test::ChannelPair;
constexpr auto makePair = sandbox_test::makeChannelPair;

TEST(AgentChannel, AssignsIdsAndReturnsTheMatchingReply) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  auto reply = std::async(std::launch::async, [&] { return channel->call({{"op", "hello"}}, 2s); });
  const json request = agent->nextRequest();
  EXPECT_EQ(request["op"], "hello");
  ASSERT_TRUE(request["id"].is_number_unsigned());
  agent->send({{"id", request["id"]}, {"ok", true}, {"agent_version", "1"}});
  EXPECT_EQ(reply.get()["agent_version"], "1");
}

TEST(AgentChannel, RoutesOutOfOrderRepliesToTheirCallers) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  auto first = std::async(std::launch::async, [&] {
    return channel->call({{"op", "read_file"}, {"path", "a"}}, 2s);
  });
  const json a = agent->nextRequest();
  auto second = std::async(std::launch::async, [&] {
    return channel->call({{"op", "read_file"}, {"path", "b"}}, 2s);
  });
  const json b = agent->nextRequest();
  EXPECT_NE(a["id"], b["id"]);
  agent->send({{"id", b["id"]}, {"ok", true}, {"path", "b"}});
  agent->send({{"id", a["id"]}, {"ok", true}, {"path", "a"}});
  EXPECT_EQ(first.get()["path"], "a");
  EXPECT_EQ(second.get()["path"], "b");
}

TEST(AgentChannel, DeliversEventsToTheirCallBeforeTheReply) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  std::mutex mutex;
  std::vector<std::string> seen;
  AgentChannel::CallOptions options;
  options.on_event = [&](const json& event) {
    std::lock_guard lock(mutex);
    seen.push_back(event["data"].get<std::string>());
  };
  auto reply = std::async(std::launch::async, [&] {
    return channel->call({{"op", "exec"}, {"stream", true}}, 2s, options);
  });
  const json request = agent->nextRequest();
  agent->send({{"id", request["id"]}, {"event", "output"}, {"stream", "stdout"}, {"data", "1\n"}});
  agent->send({{"id", 999}, {"event", "output"}, {"stream", "stdout"}, {"data", "stray"}});
  agent->send({{"id", request["id"]}, {"event", "output"}, {"stream", "stderr"}, {"data", "2\n"}});
  agent->send({{"id", request["id"]}, {"ok", true}, {"status", "success"}});
  EXPECT_EQ(reply.get()["status"], "success");
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen, (std::vector<std::string>{"1\n", "2\n"}));
}

TEST(AgentChannel, FailsEveryWaiterWhenTheStreamCloses) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  auto first = std::async(std::launch::async, [&] { return channel->call({{"op", "exec"}}, 5s); });
  (void)agent->nextRequest();
  auto second = std::async(std::launch::async, [&] {
    return channel->call({{"op", "list_files"}}, 5s);
  });
  (void)agent->nextRequest();
  agent->close();
  EXPECT_THROW(first.get(), ChannelClosedError);
  try {
    second.get();
    FAIL() << "expected ChannelClosedError";
  } catch (const ChannelClosedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the sandbox stopped: ", 0), 0U) << e.what();
  }
  EXPECT_FALSE(channel->alive());
  EXPECT_THROW(channel->call({{"op", "hello"}}, 1s), ChannelClosedError);
}

TEST(AgentChannel, SendsACancelFrameWhenTheTokenFires) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  CancelToken cancel;
  AgentChannel::CallOptions options;
  options.cancel = &cancel;
  auto reply = std::async(std::launch::async, [&] {
    return channel->call({{"op", "exec"}}, 5s, options);
  });
  const json exec = agent->nextRequest();
  cancel.cancel();
  const json cancel_request = agent->nextRequest();
  EXPECT_EQ(cancel_request["op"], "cancel");
  EXPECT_EQ(cancel_request["target"], exec["id"]);
  EXPECT_NE(cancel_request["id"], exec["id"]);
  agent->send({{"id", cancel_request["id"]}, {"ok", true}, {"cancelled", true}});
  agent->send({{"id", exec["id"]}, {"ok", true}, {"status", "cancelled"}});
  EXPECT_EQ(reply.get()["status"], "cancelled");
  EXPECT_TRUE(channel->alive());
}

TEST(AgentChannel, DeclaresAHungAgentDeadAtTheDeadline) {
  Pair pair = makePair();  // the fake agent reads nothing and never answers
  auto& channel = pair.channel;
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)channel->call({{"op", "exec"}}, 150ms);
    FAIL() << "expected ChannelClosedError";
  } catch (const ChannelClosedError& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer within 150 ms"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_FALSE(channel->alive());
}

TEST(AgentChannel, ClosesOnAFrameThatIsNotJson) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  auto reply = std::async(std::launch::async, [&] { return channel->call({{"op", "hello"}}, 5s); });
  (void)agent->nextRequest();
  agent->sendRaw(frame::encode("not json"));
  EXPECT_THROW(reply.get(), ChannelClosedError);
  EXPECT_NE(channel->closeReason().find("not a JSON object"), std::string::npos)
      << channel->closeReason();
}

TEST(AgentChannel, ReturnsFailedRepliesToTheCaller) {
  Pair pair = makePair();
  auto& channel = pair.channel;
  auto& agent = pair.agent;
  auto reply = std::async(std::launch::async, [&] {
    return channel->call({{"op", "read_file"}}, 2s);
  });
  const json request = agent->nextRequest();
  agent->send({{"id", request["id"]}, {"ok", false}, {"error", "no such file"}});
  const json answer = reply.get();
  EXPECT_FALSE(answer["ok"].get<bool>());
  EXPECT_TRUE(channel->alive());
}

}  // namespace
