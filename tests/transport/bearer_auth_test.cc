#include "transport/bearer_auth.h"

#include <gtest/gtest.h>

namespace {

TEST(Unit, ConstantTimeEqualsComparesContentAndLength) {
  EXPECT_TRUE(transport::constantTimeEquals("secret-token", "secret-token"));
  EXPECT_TRUE(transport::constantTimeEquals("", ""));
  EXPECT_FALSE(transport::constantTimeEquals("secret-token", "secret-tokeN"));
  EXPECT_FALSE(transport::constantTimeEquals("secret", "secret-token"));
  EXPECT_FALSE(transport::constantTimeEquals("secret-token-longer", "secret-token"));
  EXPECT_FALSE(transport::constantTimeEquals("", "x"));
  // Embedded NUL bytes count.
  EXPECT_FALSE(
      transport::constantTimeEquals(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(Unit, BearerAuthorizationHeader) {
  const std::string_view token = "s3cr3t";
  EXPECT_TRUE(transport::isBearerAuthorized("Bearer s3cr3t", token));
  EXPECT_TRUE(transport::isBearerAuthorized("bearer s3cr3t", token));  // scheme is case-insensitive
  EXPECT_TRUE(transport::isBearerAuthorized("Bearer   s3cr3t ", token));
  EXPECT_FALSE(transport::isBearerAuthorized("Bearer S3CR3T", token));  // the token is not
  EXPECT_FALSE(transport::isBearerAuthorized("Bearer s3cr3", token));
  EXPECT_FALSE(transport::isBearerAuthorized("Basic s3cr3t", token));
  EXPECT_FALSE(transport::isBearerAuthorized("Bearers3cr3t", token));
  EXPECT_FALSE(transport::isBearerAuthorized("Bearer", token));
  EXPECT_FALSE(transport::isBearerAuthorized("", token));
  EXPECT_FALSE(
      transport::isBearerAuthorized("Bearer ", ""));  // no token configured: nothing passes
}

}  // namespace
