#include "transport/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

struct Collected {
  std::vector<std::string> lines;
  int oversize = 0;
};

void feed(transport::LineSplitter& splitter, Collected& out, std::string_view data) {
  splitter.feed(
      data, [&](std::string_view line) { out.lines.emplace_back(line); }, [&] { ++out.oversize; });
}

TEST(Unit, LineSplitterJoinsChunksAndStripsCr) {
  transport::LineSplitter splitter(100);
  Collected out;
  feed(splitter, out, "{\"a\":");
  feed(splitter, out, "1}\r\n{\"b\":2}\n{\"c\"");
  feed(splitter, out, ":3}\n");
  EXPECT_EQ(out.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
  EXPECT_EQ(out.oversize, 0);
}

TEST(Unit, LineSplitterReportsOversizeOnceAndResumes) {
  transport::LineSplitter splitter(8);
  Collected out;
  feed(splitter, out, "0123456789");  // over the bound before any newline
  feed(splitter, out, "abcdefghij");  // still the same line: no second report
  feed(splitter, out, "xyz\nok\n0123456789abc\nfine\n");
  EXPECT_EQ(out.oversize, 2);
  EXPECT_EQ(out.lines, (std::vector<std::string>{"ok", "fine"}));
}

TEST(Unit, LineSplitterAcceptsLineExactlyAtBound) {
  transport::LineSplitter splitter(4);
  Collected out;
  feed(splitter, out, "abcd\nabcde\n");
  EXPECT_EQ(out.lines, (std::vector<std::string>{"abcd"}));
  EXPECT_EQ(out.oversize, 1);
}

TEST(Unit, LineSplitterFinishDeliversUnterminatedLine) {
  transport::LineSplitter splitter(100);
  Collected out;
  feed(splitter, out, "{\"last\":true}");
  EXPECT_TRUE(out.lines.empty());
  splitter.finish([&](std::string_view line) { out.lines.emplace_back(line); });
  EXPECT_EQ(out.lines, (std::vector<std::string>{"{\"last\":true}"}));
}

}  // namespace
