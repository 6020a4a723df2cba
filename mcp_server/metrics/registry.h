// The set of metrics a process exposes, and their rendering for a Prometheus scrape.
//
//   metrics::Registry registry;
//   auto& calls = registry.counter("mcp_tool_calls_total", "Tool calls.", {{"tool", "exec"}});
//   calls.inc();                                       // lock-free, on the hot path
//   registry.gaugeCallback("mcp_pool_size", "Warm sandboxes.", [&pool] { return pool.size(); });
//   response.body = registry.render();                 // with kContentType (text_format.h)
//
// Registration returns a reference that stays valid for the registry's lifetime; asking again
// with the same name and labels returns the same object, so callers may register lazily or once
// and keep the reference. Registration throws std::invalid_argument on an invalid metric or label
// name, on a name already registered with another type, help text or bucket layout, or on label
// names that differ from the family's other series.
// Thread-safe: every member may be called from any thread; registration and render() take a
// mutex, updates to the returned metrics do not.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/family.h"
#include "metrics/histogram.h"
#include "metrics/metric.h"
#include "metrics/text_format.h"

namespace metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // `name` is the full family name and must end in "_total" (the exposition does not add it).
  Counter& counter(const std::string& name, const std::string& help, Labels labels = {});

  Gauge& gauge(const std::string& name, const std::string& help, Labels labels = {});

  // `buckets`: upper bounds, strictly increasing (see checkedBuckets); +Inf is added. Every
  // series of one name must use the same buckets. The label name "le" is reserved.
  Histogram& histogram(const std::string& name, const std::string& help,
                       std::vector<double> buckets, Labels labels = {});

  // A gauge series whose value is `read()` at each render(), for values owned elsewhere (a pool's
  // size). Registering the same name and labels twice throws. `read` runs on the rendering
  // thread without the registry's lock, so it may take locks of its own even where their holders
  // update metrics; it must be quick and stay callable for the registry's lifetime (or until no
  // render can run). If it throws, that series is left out of the scrape.
  void gaugeCallback(const std::string& name, const std::string& help, std::function<double()> read,
                     Labels labels = {});

  // A counter series read at each render(), for a count kept elsewhere (an engine client's
  // errors); `read` must never go down. The same rules as gaugeCallback; the name ends in _total.
  void counterCallback(const std::string& name, const std::string& help,
                       std::function<double()> read, Labels labels = {});

  // Every family in the text exposition format 0.0.4: families sorted by name, each with
  // # HELP (left out when the help is empty) and # TYPE, then its series sorted by labels.
  [[nodiscard]] std::string render() const;

 private:
  void callback(const std::string& name, const std::string& help, detail::Type type,
                std::function<double()> read, Labels labels);
  detail::Family& family(const std::string& name, const std::string& help, detail::Type type,
                         const std::vector<double>& buckets = {});

  mutable std::mutex mutex_;
  std::map<std::string, detail::Family> families_;
};

}  // namespace metrics
