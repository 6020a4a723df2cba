// Counter, Gauge and Histogram updates, alone and from many threads at once.
#include "metrics/metric.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace {

constexpr int kThreads = 8;
constexpr int kPerThread = 100000;

TEST(Metrics, CounterIgnoresNegativeAndNaN) {
  metrics::Counter counter;
  counter.inc();
  counter.inc(2.5);
  counter.inc(-10);
  counter.inc(std::numeric_limits<double>::quiet_NaN());
  counter.inc(0);
  EXPECT_EQ(counter.value(), 3.5);
}

TEST(Metrics, GaugeSetIncDec) {
  metrics::Gauge gauge;
  gauge.set(10);
  gauge.inc();
  gauge.inc(4);
  gauge.dec(20);
  EXPECT_EQ(gauge.value(), -5);
  gauge.set(0.5);
  EXPECT_EQ(gauge.value(), 0.5);
}

TEST(Metrics, HistogramCountsBoundaryValueInItsBucket) {
  metrics::Histogram histogram({0.005, 0.01});
  histogram.observe(0.005);
  histogram.observe(0.0050000001);
  histogram.observe(0.01);
  histogram.observe(100);
  histogram.observe(std::numeric_limits<double>::quiet_NaN());  // ignored
  const auto snapshot = histogram.snapshot();
  EXPECT_EQ(snapshot.cumulative, (std::vector<std::uint64_t>{1, 3, 4}));
  EXPECT_EQ(snapshot.count, 4U);
  EXPECT_DOUBLE_EQ(snapshot.sum, 100.0200000001);
}

TEST(Metrics, ConcurrentUpdatesFromEightThreadsSumExactly) {
  metrics::Registry registry;
  auto& counter = registry.counter("hits_total", "Hits.");
  auto& gauge = registry.gauge("in_flight", "In flight.");
  auto& histogram = registry.histogram("t_seconds", "T.", {0.5, 1});
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, &counter, &gauge, &histogram, t] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.inc();
        gauge.inc();
        gauge.dec();
        histogram.observe((i % 2 == 0) ? 0.5 : 2.0);
        if (i % 10000 == 0) {  // lookups and scrapes while others update
          registry.counter("hits_total", "Hits.").inc(0);
          registry.gauge("per_thread", "P.", {{"t", std::to_string(t)}}).inc();
          (void)registry.render();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  constexpr std::uint64_t kTotal = std::uint64_t{kThreads} * kPerThread;
  constexpr std::uint64_t kHalf = kTotal / 2;  // half observe 0.5, half 2.0
  EXPECT_EQ(counter.value(), static_cast<double>(kTotal));
  EXPECT_EQ(gauge.value(), 0);
  const auto snapshot = histogram.snapshot();
  EXPECT_EQ(snapshot.count, kTotal);
  EXPECT_EQ(snapshot.cumulative, (std::vector<std::uint64_t>{kHalf, kHalf, kTotal}));
  EXPECT_EQ(snapshot.sum, (0.5 + 2.0) * static_cast<double>(kHalf));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(registry.gauge("per_thread", "P.", {{"t", std::to_string(t)}}).value(),
              kPerThread / 10000);
  }
}

TEST(Metrics, ConcurrentRegistrationReturnsOneObject) {
  metrics::Registry registry;
  std::vector<metrics::Counter*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, &seen, t] {
      auto& counter = registry.counter("shared_total", "Shared.", {{"k", "v"}});
      for (int i = 0; i < 1000; ++i) counter.inc();
      seen[static_cast<std::size_t>(t)] = &counter;
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto* counter : seen) EXPECT_EQ(counter, seen[0]);
  EXPECT_EQ(seen[0]->value(), kThreads * 1000);
}

}  // namespace
