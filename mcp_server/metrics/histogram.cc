#include "metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}

void Histogram::observe(double value) noexcept {
  if (std::isnan(value)) return;
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[static_cast<std::size_t>(bucket)].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snapshot;
  snapshot.cumulative.reserve(counts_.size());
  for (const auto& bucket_count : counts_) {
    snapshot.count += bucket_count.load(std::memory_order_relaxed);
    snapshot.cumulative.push_back(snapshot.count);
  }
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

std::vector<double> checkedBuckets(std::vector<double> bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      throw std::invalid_argument("histogram bucket " + std::to_string(i) +
                                  " is not a finite number; +Inf may only come last");
    }
    if (i > 0 && bounds[i] <= bounds[i - 1]) {
      throw std::invalid_argument("histogram buckets must be strictly increasing (bucket " +
                                  std::to_string(i) + ")");
    }
  }
  return bounds;
}

}  // namespace metrics
