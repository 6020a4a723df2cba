#include <gtest/gtest.h>

#include "common/base64.h"
#include "common/frame.h"
#include "common/utf8.h"

namespace {

TEST(Frame, RoundTripsAcrossArbitrarySplits) {
  const std::string a = R"({"id":1})";
  const std::string b(70000, 'x');
  const std::string wire = frame::encode(a) + frame::encode(b) + frame::encode("");
  for (std::size_t step : {1UL, 3UL, 4UL, 7UL, 4096UL, wire.size()}) {
    frame::Decoder decoder;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < wire.size(); i += step) {
      decoder.feed(std::string_view(wire).substr(i, step));
      while (auto payload = decoder.next()) out.push_back(*payload);
    }
    ASSERT_EQ(out.size(), 3U) << "step " << step;
    EXPECT_EQ(out[0], a);
    EXPECT_EQ(out[1], b);
    EXPECT_EQ(out[2], "");
    EXPECT_EQ(decoder.buffered(), 0U);
  }
}

TEST(Frame, HeaderIsBigEndianLength) {
  const auto wire = frame::encode("abc");
  ASSERT_EQ(wire.size(), 7U);
  EXPECT_EQ(wire.substr(0, 4), std::string("\0\0\0\3", 4));
}

TEST(Frame, OversizedAnnouncementIsAnError) {
  frame::Decoder decoder(16);
  decoder.feed(std::string("\0\0\0\x20", 4));
  EXPECT_THROW((void)decoder.next(), frame::FrameError);
}

TEST(Base64, KnownVectors) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"},
                                                         {std::string("\0\xff", 2), "AP8="}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(common::base64Encode(plain), encoded);
    EXPECT_EQ(common::base64Decode(encoded), plain);
  }
}

TEST(Base64, RoundTripsEveryByteValueAndLength) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (std::size_t length = 0; length <= all.size(); ++length) {
    const std::string input = all.substr(0, length);
    EXPECT_EQ(common::base64Decode(common::base64Encode(input)), input) << "length " << length;
  }
  EXPECT_EQ(common::base64Decode("Zm9vYg"), "foob");  // unpadded input is accepted
}

TEST(Base64, RejectsMalformedInput) {
  EXPECT_FALSE(common::base64Decode("Zm9v!"));
  EXPECT_FALSE(common::base64Decode("Z"));
  EXPECT_FALSE(common::base64Decode("Zg==Zg=="));
  EXPECT_FALSE(common::base64Decode("Zg="));
  EXPECT_EQ(common::base64Decode("Zm9v\nYmFy"), "foobar");
}

TEST(Utf8, Validation) {
  EXPECT_TRUE(common::isValidUtf8("plain ascii"));
  EXPECT_TRUE(common::isValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(common::isValidUtf8("\xff"));
  EXPECT_FALSE(common::isValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(common::isValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(common::isValidUtf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(common::isValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

}  // namespace
