#include "transport/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>

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

}  // namespace
