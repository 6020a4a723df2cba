#include "mcp/task_store.h"

#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <set>
#include <thread>

#include "jsonrpc/errors.h"
#include "mcp/session_lanes.h"
#include "mcp/task_notifications.h"

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

// A client that never answers must not hold the task (and its thread) for ever.
TEST_F(TaskStoreTest, AnInputWaitEndsWhenThePatienceRunsOutAndTheTaskWorksAgain) {
  const std::string id = store.create(std::nullopt)["taskId"];
  CancelToken stop;
  const json asked = {{"name", {{"method", "elicitation/create"}, {"params", json::object()}}}};
  EXPECT_FALSE(store.awaitInput(id, asked, stop, 50ms));
  EXPECT_EQ(store.get(id)["status"], "working");
  store.deliverInput(id, {{"name", {{"action", "accept"}}}});  // too late: ignored
  EXPECT_EQ(store.get(id)["status"], "working");
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

TEST(TaskNotifications, WaitUntilAListenerAttachesThenStreamLive) {
  mcp::TaskNotifications notifications(1 << 20, nullptr);
  std::vector<json> got;
  notifications.send("t", {{"n", 1}});
  notifications.send("other", {{"n", 100}});
  notifications.send("t", {{"n", 2}});
  const auto key = notifications.attach("t", [&](const json& m) { got.push_back(m); });
  notifications.send("t", {{"n", 3}});
  notifications.detach("t", key);
  notifications.send("t", {{"n", 4}});  // waits for the next listener
  ASSERT_EQ(got.size(), 3U);            // the other task's stay
  EXPECT_EQ(got[0]["n"], 1);
  EXPECT_EQ(got[2]["n"], 3);
  std::vector<json> later;
  (void)notifications.attach("t", [&](const json& m) { later.push_back(m); });
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(later[0]["n"], 4);
  std::vector<json> others;
  (void)notifications.attach("other", [&](const json& m) { others.push_back(m); });
  ASSERT_EQ(others.size(), 1U);
  EXPECT_EQ(notifications.waitingBytes(), 0U);
}

// The bound is the client's, whatever the number of its tasks: a new task's output pushes out
// the oldest waiting output of any task, and its listener hears how much it lost.
TEST(TaskNotifications, TheClientsQueueIsBoundedAcrossItsTasksDroppingTheOldest) {
  mcp::TaskMemory server(1 << 20, 1 << 20);
  mcp::TaskNotifications notifications(1000, &server);
  const json line = {{"data", std::string(80, 'x')}};
  for (int task = 0; task < 32; ++task) {
    for (int i = 0; i < 20; ++i) notifications.send("task-" + std::to_string(task), line);
  }
  EXPECT_LE(notifications.waitingBytes(), 1000U);
  EXPECT_EQ(server.queued.used(), notifications.waitingBytes());
  EXPECT_EQ(notifications.dropped("task-0"), 20U);  // the oldest went first
  EXPECT_EQ(notifications.dropped("task-31"), 20U - (notifications.waitingBytes() / 91));
  EXPECT_EQ(server.dropped_notifications.load(),
            std::size_t{32} * 20 - notifications.waitingBytes() / 91);
  std::vector<json> got;
  (void)notifications.attach("task-0", [&](const json& m) { got.push_back(m); });
  ASSERT_EQ(got.size(), 1U);  // only the notice
  EXPECT_EQ(got[0]["method"], "notifications/message");
  EXPECT_NE(got[0]["params"]["data"].get<std::string>().find("20 earlier notifications"),
            std::string::npos);
  EXPECT_EQ(got[0]["params"]["_meta"][mcp::kRelatedTaskMetaKey]["taskId"], "task-0");
  got.clear();
  (void)notifications.attach("task-0", [&](const json& m) { got.push_back(m); });
  EXPECT_TRUE(got.empty());  // told once
}

TEST(TaskNotifications, AllClientsShareTheServersBoundAndGiveBytesBackWhenGone) {
  mcp::TaskMemory server(1 << 20, 500);
  const json line = {{"data", std::string(80, 'x')}};  // 91 bytes serialized
  {
    mcp::TaskNotifications first(1 << 20, &server);
    mcp::TaskNotifications second(1 << 20, &server);
    for (int i = 0; i < 4; ++i) first.send("a", line);
    for (int i = 0; i < 4; ++i) second.send("b", line);
    EXPECT_LE(server.queued.used(), 500U);
    // The second made room from its own oldest only: the first keeps its four.
    EXPECT_EQ(first.waitingBytes(), 4U * 91);
    EXPECT_EQ(second.dropped("b"), 3U);
    first.forget("a");
    EXPECT_EQ(first.waitingBytes(), 0U);
    EXPECT_EQ(server.queued.used(), second.waitingBytes());
  }
  EXPECT_EQ(server.queued.used(), 0U);
}

TEST(TaskNotifications, AMessageLargerThanTheBoundIsDroppedAndCounted) {
  mcp::TaskNotifications notifications(100, nullptr);
  notifications.send("t", {{"data", std::string(200, 'x')}});
  EXPECT_EQ(notifications.waitingBytes(), 0U);
  EXPECT_EQ(notifications.dropped("t"), 1U);
}

TEST(TaskNotifications, InvalidUtf8WaitsAsTheTransportsWriteIt) {
  mcp::TaskNotifications notifications(1 << 20, nullptr);
  notifications.send("t", {{"data", std::string("ok \xff")}});
  std::vector<json> got;
  (void)notifications.attach("t", [&](const json& m) { got.push_back(m); });
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0]["data"], "ok \ufffd");
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

TEST(SessionLanes, WhenTurnRunsWithoutAWaitingThreadOnTheLeavingThread) {
  mcp::SessionLanes lanes;
  auto first = lanes.enqueue("s");
  auto second = lanes.enqueue("s");
  auto third = lanes.enqueue("s");
  int ran_first = 0;
  std::vector<int> order;
  first.whenTurn([&] { ++ran_first; });  // first already: runs at once
  EXPECT_EQ(ran_first, 1);
  second.whenTurn([&] { order.push_back(2); });
  third.whenTurn([&] { order.push_back(3); });
  EXPECT_TRUE(order.empty());
  EXPECT_FALSE(second.isFirst());
  first.leave();
  EXPECT_EQ(order, std::vector<int>{2});
  EXPECT_TRUE(second.isFirst());
  second.leave();
  EXPECT_EQ(order, (std::vector<int>{2, 3}));
  third.leave();
  EXPECT_EQ(lanes.lineCount(), 0U);
}

TEST(SessionLanes, APlaceLeftBeforeItsTurnNeverRunsItsCallback) {
  mcp::SessionLanes lanes;
  auto first = lanes.enqueue("s");
  auto second = lanes.enqueue("s");
  auto third = lanes.enqueue("s");
  bool second_ran = false;
  bool third_ran = false;
  second.whenTurn([&] { second_ran = true; });
  third.whenTurn([&] { third_ran = true; });
  second.leave();  // cancelled while it waited
  first.leave();
  EXPECT_FALSE(second_ran);
  EXPECT_TRUE(third_ran);
}

TEST_F(TaskStoreTest, WhenResultAnswersLaterOnTheFinishingThreadOrAtOnce) {
  const std::string id = store.create(std::nullopt)["taskId"];
  std::vector<json> got;
  const auto collect = [&](const TaskStore::Outcome& outcome) { got.push_back(outcome()); };
  const auto key = store.whenResult(id, collect);
  EXPECT_NE(key, 0U);
  EXPECT_TRUE(got.empty());
  (void)store.finish(id, okResult());
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0]["_meta"][mcp::kRelatedTaskMetaKey]["taskId"], id);
  EXPECT_FALSE(store.dropWaiter(key));           // it ran
  EXPECT_EQ(store.whenResult(id, collect), 0U);  // the result is in: answered at once
  EXPECT_EQ(got.size(), 2U);
  EXPECT_EQ(errorCode([&] { (void)store.whenResult("nope", collect); }), jsonrpc::kInvalidParams);
}

TEST_F(TaskStoreTest, DroppedWaitersNeverRunAndCloseAnswersTheRestWithAnError) {
  const std::string id = store.create(std::nullopt)["taskId"];
  int dropped_runs = 0;
  const auto key = store.whenResult(id, [&](const TaskStore::Outcome&) { ++dropped_runs; });
  EXPECT_TRUE(store.dropWaiter(key));
  int code = 0;
  (void)store.whenResult(
      id, [&](const TaskStore::Outcome& outcome) { code = errorCode([&] { (void)outcome(); }); });
  store.close();
  EXPECT_EQ(code, jsonrpc::kInvalidRequest);
  EXPECT_EQ(dropped_runs, 0);
}

TEST_F(TaskStoreTest, ResultBytesAreBoundedPerClientAndServerWideAndComeBackWhenForgotten) {
  limits.max_result_bytes = 1000;
  mcp::ByteBudget server_wide(1500);
  TaskStore a(
      limits, [this] { return now; }, &server_wide);
  TaskStore b(
      limits, [this] { return now; }, &server_wide);
  const std::string a1 = a.create(std::nullopt)["taskId"];
  const std::string a2 = a.create(std::nullopt)["taskId"];
  const std::string b1 = b.create(std::nullopt)["taskId"];
  EXPECT_TRUE(a.reserveResultBytes(a1, 800));
  EXPECT_FALSE(a.reserveResultBytes(a2, 300));       // the client's own budget
  EXPECT_FALSE(b.reserveResultBytes(b1, 800));       // within b's, past the server's
  EXPECT_TRUE(b.reserveResultBytes(b1, 800, true));  // already as small as it gets
  EXPECT_EQ(server_wide.used(), 1600U);
  (void)a.finish(a1, okResult());
  now += 61s;  // a1 expires (default ttl 60 s after it finished)
  EXPECT_EQ(a.resultBytes(), 0U);
  EXPECT_EQ(server_wide.used(), 800U);
  b.close();
  EXPECT_EQ(server_wide.used(), 0U);
}

TEST_F(TaskStoreTest, GetSaysUntilWhenAFinishedTaskIsKept) {
  const std::string id = store.create(std::nullopt)["taskId"];
  EXPECT_FALSE(store.get(id).contains("statusMessage"));
  (void)store.finish(id, okResult());
  EXPECT_NE(store.get(id)["statusMessage"].get<std::string>().find("Kept until "),
            std::string::npos);
}

}  // namespace
