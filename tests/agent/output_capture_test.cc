#include "agent/output_capture.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using agent::completeUtf8PrefixLength;
using agent::OutputCapture;
using agent::Utf8Rechunker;

TEST(Unit, CaptureKeepsEverythingUnderTheCap) {
  OutputCapture capture(10);
  EXPECT_EQ(capture.append("hello"), "hello");
  EXPECT_EQ(capture.append("12345"), "12345");
  EXPECT_EQ(capture.data(), "hello12345");
  EXPECT_EQ(capture.totalBytes(), 10U);
  EXPECT_FALSE(capture.truncated());
}

TEST(Unit, CaptureStopsAtTheCapButKeepsCounting) {
  OutputCapture capture(8);
  EXPECT_EQ(capture.append("abcdef"), "abcdef");
  EXPECT_EQ(capture.append("ghijkl"), "gh");
  EXPECT_EQ(capture.append("more"), "");
  EXPECT_EQ(capture.data(), "abcdefgh");
  EXPECT_EQ(capture.totalBytes(), 16U);
  EXPECT_TRUE(capture.truncated());
}

TEST(Unit, CaptureWithZeroCapCountsOnly) {
  OutputCapture capture(0);
  EXPECT_EQ(capture.append("abc"), "");
  EXPECT_EQ(capture.data(), "");
  EXPECT_EQ(capture.totalBytes(), 3U);
  EXPECT_TRUE(capture.truncated());
}

TEST(Unit, CaptureDropsACharacterCutByTheCap) {
  OutputCapture capture(5);
  EXPECT_EQ(capture.append("abcd\xC3\xA9"), "abcd");  // 'é' would straddle the cap
  EXPECT_EQ(capture.data(), "abcd");
  EXPECT_EQ(capture.totalBytes(), 6U);
  EXPECT_TRUE(capture.truncated());
}

TEST(Unit, Utf8PrefixStopsBeforeAnUnfinishedSequence) {
  EXPECT_EQ(completeUtf8PrefixLength(""), 0U);
  EXPECT_EQ(completeUtf8PrefixLength("abc"), 3U);
  EXPECT_EQ(completeUtf8PrefixLength("a\xE2\x82"), 1U);         // '€' missing its last byte
  EXPECT_EQ(completeUtf8PrefixLength("a\xE2\x82\xAC"), 4U);     // whole '€'
  EXPECT_EQ(completeUtf8PrefixLength("a\xF0\x9F\x98"), 1U);     // emoji missing a byte
  EXPECT_EQ(completeUtf8PrefixLength("a\xFF"), 2U);             // invalid byte counts as complete
  EXPECT_EQ(completeUtf8PrefixLength("\x80\x80\x80\x80"), 4U);  // stray continuation bytes
}

TEST(Unit, RechunkerDeliversSplitCharactersWhole) {
  Utf8Rechunker chunks;
  EXPECT_EQ(chunks.push("price: \xE2\x82"), "price: ");
  EXPECT_EQ(chunks.push("\xAC 5"), "\xE2\x82\xAC 5");
  EXPECT_EQ(chunks.push("\xC3"), "");
  EXPECT_EQ(chunks.flush(), "\xC3");
  EXPECT_EQ(chunks.flush(), "");
}

}  // namespace
