// What the registry stores for one metric name and the exposition renders: a family of series of
// one type sharing a help text, one series per label set. Used by registry.cc and exposition.cc;
// not for callers, who only see Registry and the metric types.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/metric.h"

namespace metrics {

// A series' label pairs (name, value). The registry sorts them by name, so {a,b} and {b,a} are
// the same series.
using Labels = std::vector<std::pair<std::string, std::string>>;

namespace detail {

enum class Type { kCounter, kGauge, kHistogram };

[[nodiscard]] inline std::string_view typeName(Type type) noexcept {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// A gauge series is either a Gauge the caller updates or a callback read at scrape time.
using Series = std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>,
                            std::unique_ptr<Histogram>, std::function<double()>>;

struct Family {
  Type type = Type::kGauge;
  std::string help;
  std::vector<double> buckets;      // histograms: every series has these bounds
  std::map<Labels, Series> series;  // keys sorted by label name: renders in a fixed order
};

}  // namespace detail
}  // namespace metrics
