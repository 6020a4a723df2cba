#include "mcp/cancellable_requests.h"

#include <gtest/gtest.h>

namespace {

using nlohmann::json;

TEST(Unit, CancellableRequestsCancelsByIdWhileTheTokenLives) {
  mcp::CancellableRequests requests;
  auto token = requests.admit(json(7));
  ASSERT_NE(token, nullptr);
  EXPECT_FALSE(requests.cancel(json("7"))) << "the id's type is part of it";
  EXPECT_TRUE(requests.cancel(json(7)));
  EXPECT_TRUE(token->cancelled());
}

TEST(Unit, CancellableRequestsForgetsARequestWhenItsLastTokenGoes) {
  mcp::CancellableRequests requests;
  auto token = requests.admit(json("a"));
  auto copy = token;  // e.g. the worker pool's while the job waits
  token.reset();
  EXPECT_TRUE(requests.cancel(json("a")));
  copy.reset();  // answered or dropped unanswered: nothing left behind
  EXPECT_FALSE(requests.cancel(json("a")));
}

TEST(Unit, CancellableRequestsCloseAllReachesEveryRequestAndRefusesNewOnes) {
  mcp::CancellableRequests requests;
  auto first = requests.admit(json(1));
  auto reused_id = requests.admit(json(1));  // a client reusing an id while the first runs
  auto other = requests.admit(json(2));
  requests.closeAll();
  EXPECT_TRUE(first->cancelled());
  EXPECT_TRUE(reused_id->cancelled());
  EXPECT_TRUE(other->cancelled());
  EXPECT_EQ(requests.admit(json(3)), nullptr);
}

TEST(Unit, CancellableRequestsTokensMayOutliveTheRegistry) {
  std::shared_ptr<CancelToken> token;
  {
    mcp::CancellableRequests requests;
    token = requests.admit(json(1));
  }
  token->cancel();
  token.reset();  // its deleter still finds the registry it unregisters from
  SUCCEED();
}

}  // namespace
