// Registry::render(): the registry's families in the text exposition format 0.0.4.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "metrics/family.h"
#include "metrics/registry.h"
#include "metrics/text_format.h"

namespace metrics {
namespace {

using detail::Family;

// `{a="1",b="2"}`, with `le` last when given; nothing when there are no labels at all.
void appendLabels(std::string& out, const Labels& labels, const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return;
  out += '{';
  std::string_view separator;
  for (const auto& [name, value] : labels) {
    out.append(separator).append(name).append("=\"").append(escapeLabelValue(value)) += '"';
    separator = ",";
  }
  if (le != nullptr) out.append(separator).append("le=\"").append(*le) += '"';
  out += '}';
}

void appendSample(std::string& out, std::string_view name, std::string_view suffix,
                  const Labels& labels, double value, const std::string* le = nullptr) {
  out.append(name).append(suffix);
  appendLabels(out, labels, le);
  out.append(" ").append(formatValue(value)) += '\n';
}

void appendHistogram(std::string& out, const std::string& name, const Labels& labels,
                     const Histogram& histogram) {
  const Histogram::Snapshot snapshot = histogram.snapshot();
  const std::vector<double>& bounds = histogram.bounds();
  for (std::size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    const std::string le = i < bounds.size() ? formatValue(bounds[i]) : "+Inf";
    appendSample(out, name, "_bucket", labels, static_cast<double>(snapshot.cumulative[i]), &le);
  }
  appendSample(out, name, "_sum", labels, snapshot.sum);
  appendSample(out, name, "_count", labels, static_cast<double>(snapshot.count));
}

// A callback's value, or nothing when it throws (the series is left out of this scrape).
std::optional<double> readCallback(const std::function<double()>& read) noexcept {
  try {
    return read();
  } catch (...) {
    return std::nullopt;
  }
}

// Callback series' values read for one render, by the series' address (map nodes never move).
using CallbackValues = std::map<const detail::Series*, std::optional<double>>;

void appendSeries(std::string& out, const std::string& name, const Labels& labels,
                  const detail::Series& series, const CallbackValues& values) {
  if (const auto* counter = std::get_if<std::unique_ptr<Counter>>(&series)) {
    appendSample(out, name, "", labels, (*counter)->value());
  } else if (const auto* gauge = std::get_if<std::unique_ptr<Gauge>>(&series)) {
    appendSample(out, name, "", labels, (*gauge)->value());
  } else if (const auto* histogram = std::get_if<std::unique_ptr<Histogram>>(&series)) {
    appendHistogram(out, name, labels, **histogram);
  } else if (const auto value = values.find(&series); value != values.end() && value->second) {
    appendSample(out, name, "", labels, *value->second);
  }  // a callback registered after its values were read shows from the next scrape on
}

void appendFamily(std::string& out, const std::string& name, const Family& family,
                  const CallbackValues& values) {
  if (!family.help.empty()) {
    out.append("# HELP ").append(name).append(" ").append(escapeHelp(family.help)) += '\n';
  }
  out.append("# TYPE ").append(name).append(" ").append(typeName(family.type)) += '\n';
  for (const auto& [labels, series] : family.series) {
    appendSeries(out, name, labels, series, values);
  }
}

}  // namespace

std::string Registry::render() const {
  // Callbacks run without the registry's lock: they take locks of their own (a session
  // registry's) whose holders may be updating a metric at this moment; calling them under this
  // lock would invert that order (deadlock).
  std::vector<std::pair<const detail::Series*, std::function<double()>>> callbacks;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [name, family] : families_) {
      for (const auto& [labels, series] : family.series) {
        if (const auto* read = std::get_if<std::function<double()>>(&series)) {
          callbacks.emplace_back(&series, *read);
        }
      }
    }
  }
  CallbackValues values;
  for (const auto& [series, read] : callbacks) values[series] = readCallback(read);
  std::string out;
  const std::lock_guard lock(mutex_);
  for (const auto& [name, family] : families_) appendFamily(out, name, family, values);
  return out;
}

}  // namespace metrics
