#include "transport/sse_writer.h"

#include <gtest/gtest.h>

namespace {

TEST(Unit, SseEventHasIdEventAndData) {
  EXPECT_EQ(transport::formatSseEvent("7-1", "message", R"({"jsonrpc":"2.0"})"),
            "id: 7-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
}

TEST(Unit, SseEventSplitsMultilineData) {
  EXPECT_EQ(transport::formatSseEvent("", "message", "a\nb\r\nc"),
            "event: message\ndata: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(transport::formatSseEvent("1", "", ""), "id: 1\ndata: \n\n");
}

}  // namespace
