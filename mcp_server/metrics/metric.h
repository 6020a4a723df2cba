// Counter and Gauge: one time series each, updated on hot paths. Updates are lock-free
// (std::atomic<double>, relaxed order: a scrape needs each value, not an order between them).
// Objects are created and owned by metrics::Registry and live as long as it does.
// Thread-safe: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cmath>

namespace metrics {

// A value that only goes up (requests served, bytes sent). Rendered as the family's sample.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `amount`. A negative or NaN amount is ignored: a counter never goes down.
  void inc(double amount = 1) noexcept {
    if (amount >= 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down (sessions open, bytes in use).
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void set(double value) noexcept { value_.store(value, std::memory_order_relaxed); }
  void inc(double amount = 1) noexcept { value_.fetch_add(amount, std::memory_order_relaxed); }
  void dec(double amount = 1) noexcept { value_.fetch_sub(amount, std::memory_order_relaxed); }
  [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

}  // namespace metrics
