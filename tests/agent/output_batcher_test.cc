#include "agent/output_batcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace {

using agent::OutputBatcher;
using agent::OutputStream;
using std::chrono::milliseconds;
using Event = std::pair<OutputStream, std::string>;

constexpr milliseconds kInterval{50};

struct Batcher {
  explicit Batcher(std::size_t max_event_bytes = 1024)
      : batcher(kInterval, max_event_bytes, [this](OutputStream stream, std::string data) {
          sent.emplace_back(stream, std::move(data));
        }) {}
  OutputBatcher::Clock::time_point at(int ms) const { return start + milliseconds(ms); }

  std::vector<Event> sent;
  OutputBatcher batcher;
  OutputBatcher::Clock::time_point start = OutputBatcher::Clock::now();
};

constexpr auto kOut = OutputStream::kStdout;
constexpr auto kErr = OutputStream::kStderr;

TEST(OutputBatcher, TheFirstChunkAfterAQuietIntervalGoesAtOnce) {
  Batcher b;
  EXPECT_FALSE(b.batcher.push(kOut, "before the sleep\n", b.at(0)));
  EXPECT_EQ(b.sent, (std::vector<Event>{{kOut, "before the sleep\n"}}));
  // A second of sleep later: again at once.
  EXPECT_FALSE(b.batcher.push(kOut, "after\n", b.at(1000)));
  EXPECT_EQ(b.sent.size(), 2U);
}

TEST(OutputBatcher, ChunksWithinTheIntervalWaitAndGoOutTogether) {
  Batcher b;
  (void)b.batcher.push(kOut, "1\n", b.at(0));
  const auto due = b.batcher.push(kOut, "2\n", b.at(1));
  ASSERT_TRUE(due);
  EXPECT_EQ(*due, b.at(50));
  EXPECT_EQ(b.batcher.push(kOut, "3\n", b.at(20)), due);
  EXPECT_EQ(b.batcher.flushDue(b.at(49)), due);  // early: nothing sent
  EXPECT_EQ(b.sent.size(), 1U);
  EXPECT_FALSE(b.batcher.flushDue(b.at(50)));
  EXPECT_EQ(b.sent, (std::vector<Event>{{kOut, "1\n"}, {kOut, "2\n3\n"}}));
}

TEST(OutputBatcher, KeepsTheOrderAcrossStdoutAndStderr) {
  Batcher b;
  (void)b.batcher.push(kOut, "first\n", b.at(0));
  (void)b.batcher.push(kOut, "a", b.at(1));
  (void)b.batcher.push(kErr, "b", b.at(2));
  (void)b.batcher.push(kErr, "c", b.at(3));
  (void)b.batcher.push(kOut, "d", b.at(4));
  (void)b.batcher.flushDue(b.at(60));
  EXPECT_EQ(b.sent,
            (std::vector<Event>{{kOut, "first\n"}, {kOut, "a"}, {kErr, "bc"}, {kOut, "d"}}));
}

TEST(OutputBatcher, AFullEventGoesAtOnceAndNoEventIsLargerThanTheBound) {
  Batcher b(8);
  (void)b.batcher.push(kOut, "x", b.at(0));
  (void)b.batcher.push(kOut, "0123456789abcdef!", b.at(1));
  ASSERT_EQ(b.sent.size(), 4U);
  EXPECT_EQ(b.sent[1].second, "01234567");
  EXPECT_EQ(b.sent[2].second, "89abcdef");
  EXPECT_EQ(b.sent[3].second, "!");
}

TEST(OutputBatcher, ACutNeverSplitsACharacter) {
  Batcher b(4);
  (void)b.batcher.push(kOut, "abc\xC3\xA9\xC3\xA9", b.at(0));  // "abcéé": 7 bytes
  std::string joined;
  for (const auto& [stream, data] : b.sent) {
    EXPECT_LE(data.size(), 4U);
    EXPECT_NE(static_cast<unsigned char>(data.back()) & 0xC0U, 0xC0U) << "ends on a lead byte";
    joined += data;
  }
  EXPECT_EQ(b.sent.front().second, "abc");
  EXPECT_EQ(joined, "abc\xC3\xA9\xC3\xA9");
}

TEST(OutputBatcher, FlushAllSendsWhatWaitsAtTheEnd) {
  Batcher b;
  (void)b.batcher.push(kOut, "1", b.at(0));
  (void)b.batcher.push(kErr, "2", b.at(1));
  b.batcher.flushAll();
  EXPECT_EQ(b.sent, (std::vector<Event>{{kOut, "1"}, {kErr, "2"}}));
  EXPECT_FALSE(b.batcher.flushDue(b.at(100)));
  EXPECT_EQ(b.sent.size(), 2U);
}

TEST(OutputBatcher, TwentyThousandLinesInASecondAreAFewDozenEvents) {
  Batcher b(64 * 1024);
  for (int i = 0; i < 20000; ++i) {
    const auto now = b.at(i / 20);  // 20 lines per ms
    if (const auto due = b.batcher.push(kOut, "line " + std::to_string(i) + "\n", now)) {
      if (*due <= now) (void)b.batcher.flushDue(now);
    }
  }
  b.batcher.flushAll();
  EXPECT_LE(b.sent.size(), 25U);
  std::string joined;
  for (const auto& event : b.sent) joined += event.second;
  EXPECT_EQ(joined.substr(0, 14), "line 0\nline 1\n");
  EXPECT_EQ(joined.size(),
            20000U * 7 + (20000U - 10) + (20000U - 100) + (20000U - 1000) + (20000U - 10000));
}

}  // namespace
