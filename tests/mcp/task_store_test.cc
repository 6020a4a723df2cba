#include "mcp/task_store.h"

#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <set>
#include <thread>

#include "jsonrpc/errors.h"
#include "mcp/session_lanes.h"
#include "mcp/task_outbox.h"

namespace {

using mcp::TaskStore;
using nlohmann::json;
using namespace std::chrono_literals;

class TaskStoreTest : public ::testing::Test {
 protected:
  TaskStore::Clock::time_point now = TaskStore::Clock::time_point(100h);
  mcp::TaskLimits limits = [] {
    mcp::TaskLimits l;
    l.max_tasks = 3;
    l.default_ttl = 60s;
    l.max_ttl = 120s;
    l.poll_interval = 250ms;
    l.page_size = 2;
    return l;
  }();
  TaskStore store{limits, [this] { return now; }};

  static json okResult() {
    return {{"content", json::array({{{"type", "text"}, {"text", "ok"}}})}, {"isError", false}};
  }
  static int errorCode(const std::function<void()>& f) {
    try {
      f();
    } catch (const jsonrpc::Error& e) {
      return e.code();
    }
    return 0;
  }
};

TEST_F(TaskStoreTest, NewTaskIsWorkingWithTimestampsTtlAndPollInterval) {
  const json task = store.create(std::nullopt);
  EXPECT_EQ(task["status"], "working");
  EXPECT_EQ(task["ttl"], 60000);
  EXPECT_EQ(task["pollInterval"], 250);
  EXPECT_EQ(task["taskId"].get<std::string>().size(), 32U);  // 128 random bits
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  EXPECT_TRUE(std::regex_match(task["createdAt"].get<std::string>(), iso)) << task;
  EXPECT_EQ(store.get(task["taskId"]), task);
}

TEST_F(TaskStoreTest, RequestedTtlIsClampedToTheOperatorMaximum) {
  EXPECT_EQ(store.create(5000)["ttl"], 5000);
  EXPECT_EQ(store.create(10'000'000)["ttl"], 120000);
  EXPECT_EQ(store.create(-5)["ttl"], 0);
}

TEST_F(TaskStoreTest, FinishSetsCompletedOrFailedFromIsError) {
  const std::string a = store.create(std::nullopt)["taskId"];
  const std::string b = store.create(std::nullopt)["taskId"];
  now += 1s;
  EXPECT_EQ((*store.finish(a, okResult()))["status"], "completed");
  json failed = okResult();
  failed["isError"] = true;
  const json task = *store.finish(b, failed);
  EXPECT_EQ(task["status"], "failed");
  EXPECT_FALSE(task["statusMessage"].get<std::string>().empty());
  EXPECT_NE(task["lastUpdatedAt"], task["createdAt"]);
  EXPECT_FALSE(store.finish("no-such-task", okResult()));
}

TEST_F(TaskStoreTest, UnknownIdsAreInvalidParams) {
  EXPECT_EQ(errorCode([&] { (void)store.get("nope"); }), jsonrpc::kInvalidParams);
  EXPECT_EQ(errorCode([&] { (void)store.cancel("nope"); }), jsonrpc::kInvalidParams);
  CancelToken stop;
  EXPECT_EQ(errorCode([&] { (void)store.waitResult("nope", stop); }), jsonrpc::kInvalidParams);
}

TEST_F(TaskStoreTest, CancelOnlyWhileWorkingAndCancelledStaysCancelled) {
  const std::string id = store.create(std::nullopt)["taskId"];
  const json cancelled = store.cancel(id);
  EXPECT_EQ(cancelled["status"], "cancelled");
  EXPECT_EQ(errorCode([&] { (void)store.cancel(id); }), jsonrpc::kInvalidParams);
  // The tool's own result arrives later: kept for tasks/result, status unchanged.
  EXPECT_EQ((*store.finish(id, okResult()))["status"], "cancelled");
  CancelToken stop;
  EXPECT_EQ(store.waitResult(id, stop)["content"][0]["text"], "ok");

  const std::string done = store.create(std::nullopt)["taskId"];
  (void)store.finish(done, okResult());
  EXPECT_EQ(errorCode([&] { (void)store.cancel(done); }), jsonrpc::kInvalidParams);
}

TEST_F(TaskStoreTest, WaitResultBlocksUntilFinishedAndTagsTheRelatedTask) {
  const std::string id = store.create(std::nullopt)["taskId"];
  CancelToken stop;
  auto waiting = std::async(std::launch::async, [&] { return store.waitResult(id, stop); });
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  (void)store.finish(id, okResult());
  const json result = waiting.get();
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["_meta"][mcp::kRelatedTaskMetaKey]["taskId"], id);
}

TEST_F(TaskStoreTest, WaitResultEndsWhenItsRequestIsCancelledOrTheStoreCloses) {
  const std::string id = store.create(std::nullopt)["taskId"];
  CancelToken stop;
  auto cancelled = std::async(std::launch::async,
                              [&] { return errorCode([&] { (void)store.waitResult(id, stop); }); });
  std::this_thread::sleep_for(50ms);
  stop.cancel();
  EXPECT_EQ(cancelled.get(), jsonrpc::kInvalidRequest);
  EXPECT_EQ(store.get(id)["status"], "working");  // the task itself runs on

  CancelToken other;
  auto closed = std::async(std::launch::async,
                           [&] { return errorCode([&] { (void)store.waitResult(id, other); }); });
  std::this_thread::sleep_for(50ms);
  store.close();
  EXPECT_NE(closed.get(), 0);
  EXPECT_EQ(errorCode([&] { (void)store.get(id); }), jsonrpc::kInvalidParams);
}

TEST_F(TaskStoreTest, FinishedTasksExpireTtlAfterTheyFinishedRunningOnesNever) {
  const std::string running = store.create(1000)["taskId"];
  const std::string finished = store.create(1000)["taskId"];
  now += 10min;  // a long run: its ttl from creation has long passed
  (void)store.finish(finished, okResult());
  EXPECT_TRUE(store.contains(finished));
  EXPECT_TRUE(store.contains(running));
  now += 999ms;
  EXPECT_TRUE(store.contains(finished));
  now += 1ms;
  EXPECT_FALSE(store.contains(finished));
  EXPECT_TRUE(store.contains(running));
}

TEST_F(TaskStoreTest, FullStoreEvictsOnlyTasksNobodyNeedsElseRefuses) {
  const std::string a = store.create(std::nullopt)["taskId"];
  const std::string b = store.create(std::nullopt)["taskId"];
  const std::string c = store.create(std::nullopt)["taskId"];
  EXPECT_EQ(errorCode([&] { (void)store.create(std::nullopt); }), jsonrpc::kInvalidRequest);
  (void)store.finish(a, okResult());  // finished, but its result was never fetched
  EXPECT_EQ(errorCode([&] { (void)store.create(std::nullopt); }), jsonrpc::kInvalidRequest);
  CancelToken stop;
  (void)store.waitResult(a, stop);  // fetched: now it may go
  const std::string d = store.create(std::nullopt)["taskId"];
  EXPECT_FALSE(store.contains(a));
  (void)store.cancel(b);  // cancelled tasks may go too
  (void)store.create(std::nullopt);
  EXPECT_FALSE(store.contains(b));
  EXPECT_TRUE(store.contains(c));
  EXPECT_TRUE(store.contains(d));
}

TEST_F(TaskStoreTest, ListPagesInCreationOrderWithOpaqueCursors) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(store.create(std::nullopt)["taskId"]);
  const json first = store.list(std::nullopt);
  ASSERT_EQ(first["tasks"].size(), 2U);
  EXPECT_EQ(first["tasks"][0]["taskId"], ids[0]);
  EXPECT_EQ(first["tasks"][1]["taskId"], ids[1]);
  ASSERT_TRUE(first.contains("nextCursor"));
  const json second = store.list(first["nextCursor"].get<std::string>());
  ASSERT_EQ(second["tasks"].size(), 1U);
  EXPECT_EQ(second["tasks"][0]["taskId"], ids[2]);
  EXPECT_FALSE(second.contains("nextCursor"));
  for (const char* bad : {"", "abc", "-1", "0", "999999", "99999999999999999999999"}) {
    EXPECT_EQ(errorCode([&] { (void)store.list(std::string(bad)); }), jsonrpc::kInvalidParams)
        << bad;
  }
}

TEST(TaskOutbox, QueuesUntilAListenerAttachesThenStreamsLive) {
  mcp::TaskOutbox outbox(nullptr, 1 << 20);
  std::vector<json> got;
  outbox.send({{"n", 1}});
  outbox.send({{"n", 2}});
  const auto key = outbox.attach([&](const json& m) { got.push_back(m); });
  outbox.send({{"n", 3}});
  outbox.detach(key);
  outbox.send({{"n", 4}});  // waits for the next listener
  ASSERT_EQ(got.size(), 3U);
  EXPECT_EQ(got[0]["n"], 1);
  EXPECT_EQ(got[2]["n"], 3);
  std::vector<json> later;
  (void)outbox.attach([&](const json& m) { later.push_back(m); });
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(later[0]["n"], 4);
}

TEST(TaskOutbox, QueueIsBoundedDroppingTheOldest) {
  mcp::TaskOutbox outbox(nullptr, 100);
  for (int i = 0; i < 50; ++i) outbox.send({{"data", std::string(30, 'x')}, {"i", i}});
  std::vector<json> got;
  (void)outbox.attach([&](const json& m) { got.push_back(m); });
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.size(), 3U);
  EXPECT_EQ(got.back()["i"], 49);
  EXPECT_EQ(outbox.dropped(), 50U - got.size());
}

TEST(TaskOutbox, DirectSinkTakesEverythingAtOnce) {
  std::vector<json> direct;
  mcp::TaskOutbox outbox([&](const json& m) { direct.push_back(m); }, 100);
  outbox.send({{"n", 1}});
  EXPECT_EQ(direct.size(), 1U);
}

TEST(SessionLanes, OneAtATimeInEnqueueOrder) {
  mcp::SessionLanes lanes;
  CancelToken never;
  auto first = lanes.enqueue("s");
  auto second = lanes.enqueue("s");
  auto other = lanes.enqueue("t");
  EXPECT_TRUE(other.waitTurn(never));  // another session's line does not wait
  EXPECT_TRUE(first.waitTurn(never));
  auto waiting = std::async(std::launch::async, [&] { return second.waitTurn(never); });
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  first.leave();
  EXPECT_TRUE(waiting.get());
  second.leave();
  other.leave();
  EXPECT_EQ(lanes.lineCount(), 0U);
}

TEST(SessionLanes, CancelledWaiterLeavesItsPlaceAndTheLineMovesOn) {
  mcp::SessionLanes lanes;
  CancelToken never;
  CancelToken cancel;
  auto first = lanes.enqueue("s");
  auto second = lanes.enqueue("s");
  auto third = lanes.enqueue("s");
  ASSERT_TRUE(first.waitTurn(never));
  auto waiting = std::async(std::launch::async, [&] { return second.waitTurn(cancel); });
  std::this_thread::sleep_for(50ms);
  cancel.cancel();
  EXPECT_FALSE(waiting.get());
  first.leave();
  EXPECT_TRUE(third.waitTurn(never));  // the cancelled place no longer blocks the line
  third.leave();
  EXPECT_EQ(lanes.lineCount(), 0U);
}

}  // namespace
