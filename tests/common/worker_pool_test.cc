#include "common/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/cancel_token.h"

namespace {

using namespace std::chrono_literals;

TEST(Unit, WorkerPoolRunsJobsConcurrently) {
  std::promise<void> first_started;
  std::promise<void> release_first;
  auto release = release_first.get_future().share();
  std::promise<int> second;
  common::WorkerPool pool(2);  // declared last: joined before the promises die
  ASSERT_TRUE(pool.submit([&] {
    first_started.set_value();
    release.wait();
  }));
  first_started.get_future().wait();
  ASSERT_TRUE(pool.submit([&] { second.set_value(42); }));
  auto result = second.get_future();
  // The first job is still blocked; the second must run on the other worker.
  ASSERT_EQ(result.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(result.get(), 42);
  release_first.set_value();
}

TEST(Unit, WorkerPoolShutdownRunsQueuedJobsThenRefuses) {
  std::atomic<int> ran{0};
  common::WorkerPool pool(1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pool.submit([&] { ++ran; }));
  pool.shutdown();
  EXPECT_EQ(ran.load(), 20);
  EXPECT_FALSE(pool.submit([&] { ++ran; }));
  pool.shutdown();  // idempotent
  EXPECT_EQ(ran.load(), 20);
}

TEST(Unit, WorkerPoolSurvivesThrowingJob) {
  std::promise<void> after;
  common::WorkerPool pool(1);
  ASSERT_TRUE(pool.submit([] { throw std::runtime_error("boom"); }));
  ASSERT_TRUE(pool.submit([&] { after.set_value(); }));
  EXPECT_EQ(after.get_future().wait_for(2s), std::future_status::ready);
}

TEST(Unit, WorkerPoolGrowsWhenEveryWorkerIsBlocked) {
  // One long job per "session" must not hold up the others: the pool adds threads up to its max.
  std::promise<void> release_all;
  auto release = release_all.get_future().share();
  std::atomic<int> started{0};
  common::WorkerPool pool(1, 8);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(pool.submit([&] {
      ++started;
      release.wait();
    }));
  }
  for (int i = 0; i < 400 && started.load() < 8; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(started.load(), 8) << "all eight blocked jobs run side by side";
  EXPECT_EQ(pool.size(), 8U);
  release_all.set_value();
  pool.shutdown();
  EXPECT_EQ(pool.size(), 8U) << "never beyond the maximum";
}

TEST(Unit, WorkerPoolRunsJobsOfOneKeyInOrderOneAtATime) {
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> running_a{0};
  std::atomic<bool> overlapped{false};
  common::WorkerPool pool(4, 4);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(pool.submit(
        [&, i] {
          if (++running_a > 1) overlapped = true;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          {
            std::lock_guard lock(mutex);
            order.push_back(i);
          }
          --running_a;
        },
        "session-a"));
  }
  std::promise<void> other;
  ASSERT_TRUE(pool.submit([&] { other.set_value(); }, "session-b"));
  EXPECT_EQ(other.get_future().wait_for(2s), std::future_status::ready)
      << "another key does not wait behind session-a";
  pool.shutdown();
  EXPECT_FALSE(overlapped.load());
  ASSERT_EQ(order.size(), 50U);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

// Records job names in the order they ran.
class RunOrder {
 public:
  void add(std::string name) {
    std::lock_guard lock(mutex_);
    names_.push_back(std::move(name));
  }
  std::vector<std::string> names() {
    std::lock_guard lock(mutex_);
    return names_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> names_;
};

TEST(Unit, WorkerPoolRunsACancelledWaitingJobAtOnceAndKeepsTheOthersInOrder) {
  RunOrder order;
  std::promise<void> blocker_started;
  std::promise<void> release_blocker;
  auto release = release_blocker.get_future().share();
  std::promise<void> cancelled_ran;
  auto cancel_b = std::make_shared<CancelToken>();
  auto cancel_c = std::make_shared<CancelToken>();  // never fires: C keeps its place
  common::WorkerPool pool(2, 4);
  ASSERT_TRUE(pool.submit(
      [&] {
        blocker_started.set_value();
        release.wait();
        order.add("blocker");
      },
      "session-a"));
  blocker_started.get_future().wait();
  ASSERT_TRUE(pool.submit(
      [&] {
        order.add("b");
        cancelled_ran.set_value();
      },
      "session-a", cancel_b));
  ASSERT_TRUE(pool.submit([&] { order.add("c"); }, "session-a", cancel_c));
  ASSERT_TRUE(pool.submit([&] { order.add("d"); }, "session-a"));
  cancel_b->cancel();
  EXPECT_EQ(cancelled_ran.get_future().wait_for(2s), std::future_status::ready)
      << "a cancelled job does not wait for the job ahead of it";
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(order.names(), std::vector<std::string>{"b"}) << "c and d still wait for the blocker";
  release_blocker.set_value();
  pool.shutdown();
  EXPECT_EQ(order.names(), (std::vector<std::string>{"b", "blocker", "c", "d"}));
}

TEST(Unit, WorkerPoolRunsAJobCancelledBeforeItWasSubmittedAtOnce) {
  std::promise<void> release_blocker;
  auto release = release_blocker.get_future().share();
  std::promise<void> cancelled_ran;
  auto cancel = std::make_shared<CancelToken>();
  cancel->cancel();
  common::WorkerPool pool(2);
  ASSERT_TRUE(pool.submit([&] { release.wait(); }, "session-a"));
  ASSERT_TRUE(pool.submit([&] { cancelled_ran.set_value(); }, "session-a", cancel));
  EXPECT_EQ(cancelled_ran.get_future().wait_for(2s), std::future_status::ready);
  release_blocker.set_value();
}

TEST(Unit, WorkerPoolIgnoresCancelsOnceAJobStartedOrThePoolIsGone) {
  auto running = std::make_shared<CancelToken>();
  auto refused = std::make_shared<CancelToken>();
  std::atomic<int> runs{0};
  {
    std::promise<void> started;
    std::promise<void> release_first;
    auto release = release_first.get_future().share();
    common::WorkerPool pool(1);
    ASSERT_TRUE(pool.submit(
        [&] {
          ++runs;
          started.set_value();
          release.wait();
        },
        "session-a", running));
    started.get_future().wait();
    running->cancel();  // the job already runs: it is not started a second time
    release_first.set_value();
    pool.shutdown();
    EXPECT_FALSE(pool.submit([&] { ++runs; }, "session-a", refused));
  }
  refused->cancel();  // the pool is gone: its callback must not reach it
  EXPECT_EQ(runs.load(), 1);
}

// Cancels race with jobs starting and finishing: every job runs exactly once, and the jobs that
// were not cancelled run one at a time, in order.
TEST(Unit, WorkerPoolCancelsRacingWithTheLineKeepOrderForTheRest) {
  constexpr int kJobs = 300;
  std::vector<std::shared_ptr<CancelToken>> tokens;
  for (int i = 0; i < kJobs; ++i) tokens.push_back(std::make_shared<CancelToken>());
  std::vector<std::atomic<int>> runs(kJobs);
  std::mutex mutex;
  std::vector<int> kept_order;
  std::atomic<int> kept_running{0};
  std::atomic<bool> overlapped{false};
  {
    common::WorkerPool pool(2, 6);
    std::thread canceller([&] {
      for (int i = 0; i < kJobs; i += 3) {
        tokens[static_cast<std::size_t>(i)]->cancel();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    for (int i = 0; i < kJobs; ++i) {
      const bool may_cancel = i % 3 == 0;
      ASSERT_TRUE(pool.submit(
          [&, i, may_cancel] {
            ++runs[static_cast<std::size_t>(i)];
            if (may_cancel) return;
            if (++kept_running > 1) overlapped = true;
            std::this_thread::sleep_for(std::chrono::microseconds(20));
            {
              std::lock_guard lock(mutex);
              kept_order.push_back(i);
            }
            --kept_running;
          },
          "session-a", tokens[static_cast<std::size_t>(i)]));
    }
    canceller.join();
    pool.shutdown();
  }
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << i;
  EXPECT_FALSE(overlapped.load());
  ASSERT_EQ(kept_order.size(), static_cast<std::size_t>(kJobs - kJobs / 3));
  EXPECT_TRUE(std::is_sorted(kept_order.begin(), kept_order.end()));
}

}  // namespace
