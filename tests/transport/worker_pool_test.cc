#include "transport/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

TEST(Unit, WorkerPoolRunsJobsConcurrently) {
  std::promise<void> first_started;
  std::promise<void> release_first;
  auto release = release_first.get_future().share();
  std::promise<int> second;
  transport::WorkerPool pool(2);  // declared last: joined before the promises die
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
  transport::WorkerPool pool(1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pool.submit([&] { ++ran; }));
  pool.shutdown();
  EXPECT_EQ(ran.load(), 20);
  EXPECT_FALSE(pool.submit([&] { ++ran; }));
  pool.shutdown();  // idempotent
  EXPECT_EQ(ran.load(), 20);
}

TEST(Unit, WorkerPoolSurvivesThrowingJob) {
  std::promise<void> after;
  transport::WorkerPool pool(1);
  ASSERT_TRUE(pool.submit([] { throw std::runtime_error("boom"); }));
  ASSERT_TRUE(pool.submit([&] { after.set_value(); }));
  EXPECT_EQ(after.get_future().wait_for(2s), std::future_status::ready);
}

TEST(Unit, WorkerPoolGrowsWhenEveryWorkerIsBlocked) {
  // One long job per "session" must not hold up the others: the pool adds threads up to its max.
  std::promise<void> release_all;
  auto release = release_all.get_future().share();
  std::atomic<int> started{0};
  transport::WorkerPool pool(1, 8);
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
  transport::WorkerPool pool(4, 4);
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

}  // namespace
