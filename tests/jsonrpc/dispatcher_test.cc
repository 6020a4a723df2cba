#include "jsonrpc/dispatcher.h"

#include <gtest/gtest.h>

#include <vector>

#include "jsonrpc/errors.h"

namespace {

using jsonrpc::json;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dispatcher.onRequest("echo", [](const json& params, jsonrpc::CallContext&) { return params; });
    dispatcher.onRequest("fail", [](const json&, jsonrpc::CallContext&) -> json {
      throw jsonrpc::Error(jsonrpc::kInvalidParams, "bad thing");
    });
    dispatcher.onRequest("crash", [](const json&, jsonrpc::CallContext&) -> json {
      throw std::runtime_error("boom");
    });
    dispatcher.onNotification("note", [this](const json&, jsonrpc::CallContext&) { ++notes; });
  }
  std::optional<json> send(const json& message) { return dispatcher.handle(message, ctx); }

  jsonrpc::Dispatcher dispatcher;
  jsonrpc::RequestContext ctx;
  int notes = 0;
};

TEST_F(DispatcherTest, RequestGetsResultWithSameId) {
  auto reply = send({{"jsonrpc", "2.0"}, {"id", "a1"}, {"method", "echo"}, {"params", {{"x", 1}}}});
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["id"], "a1");
  EXPECT_EQ((*reply)["result"]["x"], 1);
}

TEST_F(DispatcherTest, NotificationWritesNothing) {
  EXPECT_FALSE(send({{"jsonrpc", "2.0"}, {"method", "note"}}));
  EXPECT_FALSE(send({{"jsonrpc", "2.0"}, {"method", "unknown/notification"}}));
  EXPECT_EQ(notes, 1);
}

TEST_F(DispatcherTest, UnknownMethodIs32601) {
  auto reply = send({{"jsonrpc", "2.0"}, {"id", 7}, {"method", "nope"}});
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32601);
  EXPECT_EQ((*reply)["id"], 7);
}

TEST_F(DispatcherTest, EnvelopeProblemsAre32600) {
  const json bad[] = {
      json::array({1}),
      {{"jsonrpc", "1.0"}, {"id", 1}, {"method", "echo"}},
      {{"jsonrpc", "2.0"}, {"id", 1}, {"method", 5}},
      {{"jsonrpc", "2.0"}, {"id", 1.5}, {"method", "echo"}},
      {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "echo"}, {"params", "str"}},
      "just a string",
  };
  for (const auto& message : bad) {
    auto reply = send(message);
    ASSERT_TRUE(reply) << message.dump();
    const json& error = reply->is_array() ? (*reply)[0]["error"] : (*reply)["error"];
    EXPECT_EQ(error["code"], -32600) << message.dump();
  }
}

TEST_F(DispatcherTest, HandlerErrorsMapToCodes) {
  auto fail = send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "fail"}});
  EXPECT_EQ((*fail)["error"]["code"], -32602);
  EXPECT_EQ((*fail)["error"]["message"], "bad thing");
  auto crash = send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "crash"}});
  EXPECT_EQ((*crash)["error"]["code"], -32603);
}

TEST_F(DispatcherTest, BatchCollectsOnlyRequestReplies) {
  auto reply = send(json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "echo"}},
                                 {{"jsonrpc", "2.0"}, {"method", "note"}},
                                 {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "nope"}}}));
  ASSERT_TRUE(reply);
  ASSERT_TRUE(reply->is_array());
  EXPECT_EQ(reply->size(), 2U);
  EXPECT_FALSE(send(json::array({{{"jsonrpc", "2.0"}, {"method", "note"}}})));
  auto empty = send(json::array());
  EXPECT_EQ((*empty)["error"]["code"], -32600);
}

TEST_F(DispatcherTest, ClientResponsesAreIgnored) {
  EXPECT_FALSE(send({{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}));
}

// A handler that must wait answers later through a Reply: the dispatcher writes nothing now, and
// the answer (result or error) reaches the transport with the request's id.
TEST(DispatcherAnswerLater, TheReplyCarriesTheAnswerAndTheIdLater) {
  jsonrpc::Dispatcher dispatcher;
  std::shared_ptr<jsonrpc::Reply> parked;
  dispatcher.onRequest("wait", [&](const json&, jsonrpc::CallContext& call) {
    parked = call.answerLater();
    return json();
  });
  std::vector<std::optional<json>> delivered;
  jsonrpc::RequestContext ctx;
  ctx.answer_later = [&](std::optional<json> answer) { delivered.push_back(std::move(answer)); };
  EXPECT_FALSE(dispatcher.handle({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "wait"}}, ctx));
  EXPECT_TRUE(ctx.answered_later);
  ASSERT_TRUE(parked);
  EXPECT_TRUE(delivered.empty());
  parked->complete([] { return json{{"done", true}}; });
  parked->complete([] { return json{{"twice", true}}; });  // the first answer wins
  ASSERT_EQ(delivered.size(), 1U);
  EXPECT_EQ((*delivered[0])["id"], 9);
  EXPECT_EQ((*delivered[0])["result"]["done"], true);
}

TEST(DispatcherAnswerLater, ThrowsMapLikeTheDispatchersAndALostReplyStillAnswers) {
  jsonrpc::Dispatcher dispatcher;
  std::shared_ptr<jsonrpc::Reply> parked;
  dispatcher.onRequest("wait-then-fail", [&](const json&, jsonrpc::CallContext& call) -> json {
    parked = call.answerLater();
    throw jsonrpc::Error(jsonrpc::kInvalidParams, "no such task");
  });
  dispatcher.onRequest("forgotten", [](const json&, jsonrpc::CallContext& call) {
    (void)call.answerLater();  // dropped at once: nobody will answer it
    return json();
  });
  std::vector<json> delivered;
  jsonrpc::RequestContext ctx;
  ctx.answer_later = [&](std::optional<json> answer) { delivered.push_back(*answer); };
  EXPECT_FALSE(
      dispatcher.handle({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "wait-then-fail"}}, ctx));
  EXPECT_FALSE(dispatcher.handle({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "forgotten"}}, ctx));
  ASSERT_EQ(delivered.size(), 2U);
  EXPECT_EQ(delivered[0]["error"]["code"], jsonrpc::kInvalidParams);
  EXPECT_EQ(delivered[1]["id"], 2);
  EXPECT_EQ(delivered[1]["error"]["code"], jsonrpc::kInternalError);
}

TEST(DispatcherAnswerLater, BatchElementsAndTransportsWithoutItAnswerNow) {
  jsonrpc::Dispatcher dispatcher;
  dispatcher.onRequest("wait", [](const json&, jsonrpc::CallContext& call) {
    return json{{"later", call.answerLater() != nullptr}};
  });
  jsonrpc::RequestContext plain;  // no answer_later
  auto now = dispatcher.handle({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "wait"}}, plain);
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)["result"]["later"], false);
  jsonrpc::RequestContext ctx;
  ctx.answer_later = [](std::optional<json>) { FAIL() << "a batch element answered later"; };
  auto batch =
      dispatcher.handle(json::array({{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "wait"}}}), ctx);
  ASSERT_TRUE(batch);
  EXPECT_EQ((*batch)[0]["result"]["later"], false);
}

}  // namespace

namespace {

TEST(Dispatcher, ClientResponsesGoToTheResponseHandler) {
  jsonrpc::Dispatcher dispatcher;
  std::vector<jsonrpc::json> responses;
  dispatcher.onResponse([&](const jsonrpc::json& response) { responses.push_back(response); });
  jsonrpc::RequestContext ctx;
  EXPECT_FALSE(
      dispatcher.handle({{"jsonrpc", "2.0"}, {"id", "s-1"}, {"result", {{"ok", true}}}}, ctx));
  EXPECT_FALSE(dispatcher.handle(
      {{"jsonrpc", "2.0"}, {"id", "s-2"}, {"error", {{"code", -1}, {"message", "no"}}}}, ctx));
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0]["id"], "s-1");
  EXPECT_EQ(responses[1]["error"]["message"], "no");
}

}  // namespace
