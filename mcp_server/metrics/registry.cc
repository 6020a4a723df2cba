#include "metrics/registry.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "metrics/names.h"

namespace metrics {
namespace {

using detail::Family;
using detail::Type;

void checkName(const std::string& name, Type type) {
  if (!isValidMetricName(name)) {
    throw std::invalid_argument("metric name '" + name +
                                "' is invalid: use [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  if (type == Type::kCounter && !std::string_view(name).ends_with("_total")) {
    throw std::invalid_argument("counter name '" + name + "' must end in _total");
  }
}

// Sorts the labels by name and checks each name, and that none repeats or is reserved.
Labels checkedLabels(const std::string& metric, Labels labels, Type type) {
  std::sort(labels.begin(), labels.end());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i].first;
    if (!isValidLabelName(label)) {
      throw std::invalid_argument("label name '" + label + "' of metric '" + metric +
                                  "' is invalid: use [a-zA-Z_][a-zA-Z0-9_]*, not starting with __");
    }
    if (type == Type::kHistogram && label == "le") {
      throw std::invalid_argument("label name 'le' of histogram '" + metric +
                                  "' is reserved for its buckets; pick another name");
    }
    if (i > 0 && label == labels[i - 1].first) {
      throw std::invalid_argument("label '" + label + "' appears twice in metric '" + metric + "'");
    }
  }
  return labels;
}

bool sameNames(const Labels& a, const Labels& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}

// The series for `labels` (already checked), created on first use. Throws when the series
// exists as another kind (a gauge callback asked for as a Gauge) or when a new series's label
// names differ from the family's other series.
detail::Series& seriesFor(const std::string& name, Family& family, Labels labels,
                          const std::function<detail::Series()>& make) {
  if (auto it = family.series.find(labels); it != family.series.end()) return it->second;
  if (!family.series.empty() && !sameNames(family.series.begin()->first, labels)) {
    throw std::invalid_argument("metric '" + name +
                                "' is registered with other label names; every series of a "
                                "metric must use the same label names");
  }
  return family.series.emplace(std::move(labels), make()).first->second;
}

template <typename Metric>
Metric& metricIn(const std::string& name, detail::Series& series) {
  auto* metric = std::get_if<std::unique_ptr<Metric>>(&series);
  if (metric == nullptr) {
    throw std::invalid_argument("gauge '" + name +
                                "' with these labels is a callback; it has no Gauge to update");
  }
  return **metric;
}

}  // namespace

Family& Registry::family(const std::string& name, const std::string& help, Type type,
                         const std::vector<double>& buckets) {
  auto [it, inserted] = families_.try_emplace(name);
  Family& family = it->second;
  if (inserted) {
    family.type = type;
    family.help = help;
    family.buckets = buckets;
    return family;
  }
  if (family.type != type) {
    throw std::invalid_argument("metric '" + name + "' is already registered as a " +
                                std::string(typeName(family.type)) + ", not a " +
                                std::string(typeName(type)));
  }
  if (family.help != help) {
    throw std::invalid_argument("metric '" + name +
                                "' is already registered with another help text");
  }
  if (family.buckets != buckets) {
    throw std::invalid_argument("histogram '" + name +
                                "' is already registered with other buckets");
  }
  return family;
}

Counter& Registry::counter(const std::string& name, const std::string& help, Labels labels) {
  checkName(name, Type::kCounter);
  labels = checkedLabels(name, std::move(labels), Type::kCounter);
  const std::lock_guard lock(mutex_);
  Family& counters = family(name, help, Type::kCounter);
  auto& series = seriesFor(name, counters, std::move(labels),
                           [] { return detail::Series(std::make_unique<Counter>()); });
  return metricIn<Counter>(name, series);
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, Labels labels) {
  checkName(name, Type::kGauge);
  labels = checkedLabels(name, std::move(labels), Type::kGauge);
  const std::lock_guard lock(mutex_);
  Family& gauges = family(name, help, Type::kGauge);
  auto& series = seriesFor(name, gauges, std::move(labels),
                           [] { return detail::Series(std::make_unique<Gauge>()); });
  return metricIn<Gauge>(name, series);
}

Histogram& Registry::histogram(const std::string& name, const std::string& help,
                               std::vector<double> buckets, Labels labels) {
  checkName(name, Type::kHistogram);
  labels = checkedLabels(name, std::move(labels), Type::kHistogram);
  buckets = checkedBuckets(std::move(buckets));
  const std::lock_guard lock(mutex_);
  Family& histograms = family(name, help, Type::kHistogram, buckets);
  auto& series = seriesFor(name, histograms, std::move(labels), [&buckets] {
    return detail::Series(std::make_unique<Histogram>(buckets));
  });
  return metricIn<Histogram>(name, series);
}

void Registry::gaugeCallback(const std::string& name, const std::string& help,
                             std::function<double()> read, Labels labels) {
  callback(name, help, Type::kGauge, std::move(read), std::move(labels));
}

void Registry::counterCallback(const std::string& name, const std::string& help,
                               std::function<double()> read, Labels labels) {
  callback(name, help, Type::kCounter, std::move(read), std::move(labels));
}

void Registry::callback(const std::string& name, const std::string& help, Type type,
                        std::function<double()> read, Labels labels) {
  const std::string kind(detail::typeName(type));
  checkName(name, type);
  labels = checkedLabels(name, std::move(labels), type);
  if (!read) throw std::invalid_argument(kind + " callback '" + name + "' is empty");
  const std::lock_guard lock(mutex_);
  Family& callbacks = family(name, help, type);
  bool created = false;
  seriesFor(name, callbacks, std::move(labels), [&] {
    created = true;
    return detail::Series(std::move(read));
  });
  if (!created) {
    throw std::invalid_argument(kind + " '" + name +
                                "' with these labels is already registered; register its "
                                "callback once");
  }
}

}  // namespace metrics
