#include "agent/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using agent::base64::decode;
using agent::base64::encode;

TEST(Unit, Base64EncodesRfc4648Vectors) {
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
}

TEST(Unit, Base64DecodesRfc4648VectorsPaddedAndUnpadded) {
  EXPECT_EQ(decode("Zm9vYmFy"), "foobar");
  EXPECT_EQ(decode("Zm9vYg=="), "foob");
  EXPECT_EQ(decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(decode("Zm9vYg"), "foob");
  EXPECT_EQ(decode(""), "");
}

TEST(Unit, Base64RoundTripsEveryByteValueAndLength) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (std::size_t len = 0; len <= all.size(); ++len) {
    const std::string input = all.substr(0, len);
    const auto decoded = decode(encode(input));
    ASSERT_TRUE(decoded.has_value()) << "length " << len;
    EXPECT_EQ(*decoded, input) << "length " << len;
  }
}

TEST(Unit, Base64RejectsInvalidInputWithAReason) {
  std::string error;
  EXPECT_FALSE(decode("Zm9v!mFy", &error).has_value());
  EXPECT_NE(error.find("offset 4"), std::string::npos) << error;
  EXPECT_FALSE(decode("Zm9vY", &error).has_value());
  EXPECT_NE(error.find("length"), std::string::npos) << error;
  EXPECT_FALSE(decode("Zm=", &error).has_value());
  EXPECT_NE(error.find("padding"), std::string::npos) << error;
  EXPECT_FALSE(decode("Zg==Zg==", &error).has_value());
}

}  // namespace
