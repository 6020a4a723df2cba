// mcp/client_requests.h: a tool's request to its 2025 client goes out on the call's stream and
// its answer comes back by id; errors, cancellation, timeouts and a closed connection end the
// wait with a message.
#include "mcp/client_requests.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST(ClientRequests, TheAnswerWithTheRequestsIdEndsTheWait) {
  mcp::ClientRequests requests;
  CancelToken cancel;
  json sent;
  const json result = requests.ask(
      [&](const json& message) {
        sent = message;
        EXPECT_FALSE(requests.deliver({{"jsonrpc", "2.0"}, {"id", "other"}, {"result", {}}}));
        EXPECT_TRUE(requests.deliver(
            {{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", {{"action", "accept"}}}}));
      },
      "elicitation/create", {{"message", "name?"}}, cancel, milliseconds(5000));
  EXPECT_EQ(sent["method"], "elicitation/create");
  EXPECT_EQ(sent["params"]["message"], "name?");
  EXPECT_TRUE(sent["id"].is_string());
  EXPECT_EQ(result, (json{{"action", "accept"}}));
  EXPECT_FALSE(requests.deliver({{"jsonrpc", "2.0"}, {"id", sent["id"]}, {"result", {}}}))
      << "a late answer reaches nobody";
}

TEST(ClientRequests, ErrorsCancellationTimeoutsAndClosingEndTheWait) {
  mcp::ClientRequests requests;
  CancelToken cancel;
  EXPECT_THROW((void)requests.ask(
                   [&](const json& m) {
                     requests.deliver({{"id", m["id"]}, {"error", {{"message", "declined"}}}});
                   },
                   "sampling/createMessage", json::object(), cancel, milliseconds(5000)),
               std::runtime_error);
  EXPECT_THROW((void)requests.ask([](const json&) {}, "roots/list", json::object(), cancel,
                                  milliseconds(10)),
               std::runtime_error);
  CancelToken cancelled;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(20));
    cancelled.cancel();
  });
  EXPECT_THROW((void)requests.ask([](const json&) {}, "roots/list", json::object(), cancelled,
                                  milliseconds(5000)),
               std::runtime_error);
  canceller.join();
  requests.closeAll();
  EXPECT_THROW((void)requests.ask([](const json&) {}, "roots/list", json::object(), cancel,
                                  milliseconds(5000)),
               std::runtime_error);
}

}  // namespace
