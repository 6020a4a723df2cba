#include "tools/output_forwarder.h"

#include <gtest/gtest.h>

#include "tool_test_support.h"

namespace {

using testing_support::RecordingUpdates;

TEST(OutputForwarder, NothingAskedMeansNoCallbackAndNoStreaming) {
  RecordingUpdates updates(false, false);
  tools::OutputForwarder forwarder(updates);
  EXPECT_FALSE(forwarder.enabled());
  EXPECT_FALSE(forwarder.callback()) << "an empty callback: the execution streams nothing";
}

TEST(OutputForwarder, ProgressGrowsWithTheBytesAndMarksStderr) {
  RecordingUpdates updates(true, false);
  tools::OutputForwarder forwarder(updates);
  ASSERT_TRUE(forwarder.enabled());
  const auto callback = forwarder.callback();
  ASSERT_TRUE(callback);
  callback("stdout", "line 1\n");
  callback("stderr", "oops\n");
  callback("stdout", "");  // empty chunks are not sent: progress would not grow
  callback("stdout", "line 2\n");
  ASSERT_EQ(updates.progresses.size(), 3U);
  EXPECT_EQ(updates.progresses[0].progress, 7U);
  EXPECT_EQ(updates.progresses[0].message, "line 1\n");
  EXPECT_EQ(updates.progresses[1].progress, 12U);
  EXPECT_EQ(updates.progresses[1].message, "[stderr] oops\n");
  EXPECT_EQ(updates.progresses[2].progress, 19U);
  EXPECT_TRUE(updates.logs.empty()) << "the client did not ask for log messages";
}

TEST(OutputForwarder, LogLinesNameTheirStreamAndCarryTheChunkAsIs) {
  RecordingUpdates updates(false, true);
  tools::OutputForwarder forwarder(updates);
  ASSERT_TRUE(forwarder.enabled());
  const auto callback = forwarder.callback();
  callback("stdout", "a\n");
  callback("stderr", "b\n");
  ASSERT_EQ(updates.logs.size(), 2U);
  EXPECT_EQ(updates.logs[0].logger, "stdout");
  EXPECT_EQ(updates.logs[0].text, "a\n");
  EXPECT_EQ(updates.logs[1].logger, "stderr");
  EXPECT_EQ(updates.logs[1].text, "b\n") << "no [stderr] prefix: the logger names the stream";
  EXPECT_TRUE(updates.progresses.empty());
}

TEST(OutputForwarder, BothAtOnce) {
  RecordingUpdates updates(true, true);
  tools::OutputForwarder forwarder(updates);
  forwarder.callback()("stdout", "x");
  EXPECT_EQ(updates.progresses.size(), 1U);
  EXPECT_EQ(updates.logs.size(), 1U);
}

}  // namespace
