// The start-up gate of a stdio server (app/warm_up.h): server/discover is answered before the
// engine work, which the first other message begins and waits for; a failed start answers the
// waiting requests with what to fix; a server stopped before its client spoke does no work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "app/warm_up.h"

namespace {

using jsonrpc::json;
using namespace std::chrono_literals;

json request(int id, const std::string& method) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", json::object()}};
}

// Answers every request with its method; records what reached it.
class EchoEndpoint final : public jsonrpc::Endpoint {
 public:
  explicit EchoEndpoint(std::vector<std::string>& seen) : seen_(seen) {}
  std::optional<json> handle(const json& message, jsonrpc::RequestContext&) override {
    seen_.push_back(message.value("method", ""));
    return json{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", message["method"]}};
  }
  void close() override {}
  [[nodiscard]] std::string protocolVersion() const override { return "2026-07-28"; }

 private:
  std::vector<std::string>& seen_;
};

class EchoFactory final : public jsonrpc::EndpointFactory {
 public:
  using jsonrpc::EndpointFactory::open;
  std::shared_ptr<jsonrpc::Endpoint> open(const std::string&, const jsonrpc::Principal&) override {
    return std::make_shared<EchoEndpoint>(seen);
  }
  std::vector<std::string> seen;
};

TEST(StartUp, DiscoverIsAnsweredBeforeTheWorkWhichTheNextRequestBeginsAndAwaits) {
  std::atomic<int> runs{0};
  app::StartUp start_up(
      [&] {
        std::this_thread::sleep_for(50ms);
        ++runs;
        return std::string();
      },
      10s);
  auto factory = std::make_shared<EchoFactory>();
  app::GatedEndpoints gated(factory, start_up);
  auto endpoint = gated.open("stdio");
  jsonrpc::RequestContext ctx;
  EXPECT_EQ(endpoint->handle(request(1, "server/discover"), ctx).value()["result"],
            "server/discover");
  EXPECT_EQ(runs.load(), 0) << "a discover probe costs no engine request";
  EXPECT_EQ(endpoint->handle(request(2, "tools/list"), ctx).value()["result"], "tools/list");
  EXPECT_EQ(runs.load(), 1) << "the request waited for the work";
  EXPECT_EQ(endpoint->handle(request(3, "tools/call"), ctx).value()["result"], "tools/call");
  EXPECT_EQ(runs.load(), 1) << "once";
  EXPECT_EQ(factory->seen,
            (std::vector<std::string>{"server/discover", "tools/list", "tools/call"}));
  EXPECT_FALSE(start_up.failed());
}

TEST(StartUp, AFailedStartAnswersRequestsWithItsReasonAndTellsTheServer) {
  app::StartUp start_up(
      []() -> std::string { throw std::runtime_error("no engine: start dockerd"); }, 10s);
  std::atomic<bool> told{false};
  start_up.onFailure([&] { told = true; });
  auto factory = std::make_shared<EchoFactory>();
  app::GatedEndpoints gated(factory, start_up);
  auto endpoint = gated.open("stdio");
  jsonrpc::RequestContext ctx;
  const json reply = endpoint->handle(request(7, "initialize"), ctx).value();
  EXPECT_EQ(reply["id"], 7);
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("start dockerd"), std::string::npos)
      << reply;
  EXPECT_TRUE(start_up.failed());
  // The server is told on the start-up thread, just after the waiting requests are released.
  for (int i = 0; i < 500 && !told.load(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(told.load());
  EXPECT_TRUE(factory->seen.empty()) << "nothing reached the protocol";
  // A notification gets no answer, as JSON-RPC says.
  EXPECT_FALSE(
      endpoint->handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, ctx));
  // Registered after the failure: told at once.
  bool late = false;
  start_up.onFailure([&] { late = true; });
  EXPECT_TRUE(late);
}

TEST(StartUp, TheWorkBeginsAfterTheDelayWithoutAClientAndNeverAfterAStopBeforeIt) {
  std::atomic<int> runs{0};
  {
    app::StartUp start_up([&] { return ++runs, std::string(); }, 20ms);
    EXPECT_EQ(start_up.await(), "");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(runs.load(), 1);
  {
    app::StartUp start_up([&] { return ++runs, std::string(); }, 10s);
    start_up.stop();  // a discover probe stopped before its client spoke
    EXPECT_FALSE(start_up.failed());
  }
  EXPECT_EQ(runs.load(), 1) << "a stopped server did no start-up work";
}

}  // namespace
