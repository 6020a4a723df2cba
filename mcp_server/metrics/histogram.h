// Histogram: counts observations (usually durations in seconds) into buckets with fixed upper
// bounds, plus their sum. observe() is lock-free: one atomic increment for the bucket and one
// atomic add for the sum. Created and owned by metrics::Registry.
// Thread-safe: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace metrics {

// The Prometheus client libraries' default buckets, in seconds (5 ms to 10 s).
[[nodiscard]] inline std::vector<double> defaultSecondsBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

class Histogram {
 public:
  // What a scrape reads. `cumulative[i]` counts observations <= bounds()[i]; the last entry is
  // the +Inf bucket and equals `count` (count is their total, so the two always agree).
  struct Snapshot {
    std::vector<std::uint64_t> cumulative;
    std::uint64_t count = 0;
    double sum = 0;
  };

  // `bounds` must be finite and strictly increasing (see checkedBuckets); +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Counts `value` in the first bucket whose bound is >= value (a value exactly on a bound falls
  // in that bucket). A NaN observation is ignored (it would turn the sum into NaN for good).
  void observe(double value) noexcept;

  [[nodiscard]] const std::vector<double>& bounds() const noexcept { return bounds_; }
  [[nodiscard]] Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<std::uint64_t>> counts_;  // per bucket, not cumulative; last: +Inf
  std::atomic<double> sum_{0};
};

// Validates bucket bounds for a histogram: throws std::invalid_argument unless they are strictly
// increasing and not NaN or -Inf. A trailing +Inf is dropped (it is always there).
[[nodiscard]] std::vector<double> checkedBuckets(std::vector<double> bounds);

}  // namespace metrics
