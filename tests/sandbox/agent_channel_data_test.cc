// Data frames on the agent channel: a file's bytes travel raw, right after the JSON frame that
// announces them, in both directions; a peer that breaks that pairing closes the channel.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "common/frame.h"
#include "fake_agent.h"
#include "sandbox/agent_channel.h"

namespace {

using nlohmann::json;
using sandbox::AgentChannel;
using sandbox::ChannelClosedError;
using namespace std::chrono_literals;

using Pair = sandbox_test::ChannelPair;
constexpr auto makePair = sandbox_test::makeChannelPair;

// A read_file call on its own thread whose reply's data frame goes into `received`.
std::future<json> readFileInto(AgentChannel& channel, std::string& received) {
  return std::async(std::launch::async, [&channel, &received] {
    AgentChannel::CallOptions options;
    options.reply_data = &received;
    return channel.call({{"op", "read_file"}}, 5s, options);
  });
}

std::string binaryBytes(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131) % 256);
  return bytes;
}

TEST(AgentChannelData, ARequestsDataFrameFollowsItRaw) {
  Pair pair = makePair();
  const std::string content = binaryBytes(3 * 1024 * 1024);  // bigger than one socket buffer
  auto reply = std::async(std::launch::async, [&] {
    AgentChannel::CallOptions options;
    options.request_data = content;
    return pair.channel->call({{"op", "write_file"}, {"path", "f"}}, 5s, options);
  });
  const frame::Frame request = pair.agent->nextFrame();
  ASSERT_EQ(request.kind, frame::FrameKind::kJson);
  const json message = json::parse(request.payload);
  EXPECT_EQ(message["data_frame"], true);
  EXPECT_FALSE(message.contains("data_b64"));
  const frame::Frame data = pair.agent->nextFrame();
  ASSERT_EQ(data.kind, frame::FrameKind::kData);
  EXPECT_EQ(data.payload, content) << "the bytes arrive as they are: no base64, no escaping";
  pair.agent->send({{"id", message["id"]}, {"ok", true}, {"bytes", content.size()}});
  EXPECT_EQ(reply.get()["bytes"], content.size());
}

TEST(AgentChannelData, AReplysDataFrameReachesItsCaller) {
  Pair pair = makePair();
  const std::string content = binaryBytes(2 * 1024 * 1024);
  std::string received;
  auto reply = readFileInto(*pair.channel, received);
  const json request = pair.agent->nextRequest();
  pair.agent->send({{"id", request["id"]}, {"ok", true}, {"data_frame", true}});
  pair.agent->sendData(content);
  EXPECT_EQ(reply.get()["data_frame"], true);
  EXPECT_EQ(received, content);
  EXPECT_TRUE(pair.channel->alive());
}

TEST(AgentChannelData, AnUnannouncedDataFrameClosesTheChannel) {
  Pair pair = makePair();
  auto reply = std::async(std::launch::async, [&] {
    return pair.channel->call({{"op", "hello"}}, 5s);
  });
  (void)pair.agent->nextFrame();
  pair.agent->sendData("surprise");
  EXPECT_THROW(reply.get(), ChannelClosedError);
  EXPECT_NE(pair.channel->closeReason().find("no reply announced"), std::string::npos)
      << pair.channel->closeReason();
}

TEST(AgentChannelData, AnAnnouncedDataFrameThatNeverComesClosesTheChannel) {
  Pair pair = makePair();
  std::string received;
  auto reply = readFileInto(*pair.channel, received);
  const json request = pair.agent->nextRequest();
  pair.agent->send({{"id", request["id"]}, {"ok", true}, {"data_frame", true}});
  pair.agent->send({{"id", request["id"]}, {"ok", true}});  // JSON where the data should be
  EXPECT_THROW(reply.get(), ChannelClosedError);
  EXPECT_TRUE(received.empty());
}

TEST(AgentChannelData, DataForACallerThatDidNotAskIsDropped) {
  Pair pair = makePair();
  auto reply = std::async(std::launch::async, [&] {
    return pair.channel->call({{"op", "hello"}}, 5s);
  });
  const json request = pair.agent->nextRequest();
  pair.agent->send({{"id", request["id"]}, {"ok", true}, {"data_frame", true}});
  pair.agent->sendData("unasked");
  EXPECT_EQ(reply.get()["ok"], true);
  EXPECT_TRUE(pair.channel->alive()) << "the pairing was kept; only the bytes had no taker";
}

}  // namespace
