// The exact text Registry::render() produces, one table row per shape of family.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace {

struct RenderRow {
  std::string name;
  std::function<void(metrics::Registry&)> record;
  std::string expected;
};

std::ostream& operator<<(std::ostream& out, const RenderRow& row) { return out << row.name; }

// A function, not a global: building the rows may throw.
std::vector<RenderRow> renderRows() {
  return {
      {"Empty", [](metrics::Registry&) {}, ""},
      {"CounterWithoutLabels",
       [](metrics::Registry& registry) {
         auto& requests = registry.counter("requests_total", "Requests served.");
         requests.inc();
         requests.inc(2);
       },
       "# HELP requests_total Requests served.\n"
       "# TYPE requests_total counter\n"
       "requests_total 3\n"},
      {"CounterNeverIncrementedIsZero",
       [](metrics::Registry& registry) { registry.counter("errors_total", "Errors."); },
       "# HELP errors_total Errors.\n"
       "# TYPE errors_total counter\n"
       "errors_total 0\n"},
      {"CounterWithLabelsSortedByName",
       [](metrics::Registry& registry) {
         registry.counter("calls_total", "Tool calls.", {{"tool", "exec"}, {"result", "ok"}}).inc();
         registry.counter("calls_total", "Tool calls.", {{"result", "error"}, {"tool", "exec"}})
             .inc(4);
         registry.counter("calls_total", "Tool calls.", {{"tool", "write"}, {"result", "ok"}})
             .inc(1e6);
       },
       "# HELP calls_total Tool calls.\n"
       "# TYPE calls_total counter\n"
       "calls_total{result=\"error\",tool=\"exec\"} 4\n"
       "calls_total{result=\"ok\",tool=\"exec\"} 1\n"
       "calls_total{result=\"ok\",tool=\"write\"} 1000000\n"},
      {"Gauge",
       [](metrics::Registry& registry) {
         registry.gauge("load_ratio", "Load.").set(0.75);
         auto& sessions = registry.gauge("sessions", "Open sessions.", {{"transport", "http"}});
         sessions.inc(3);
         sessions.dec();
       },
       "# HELP load_ratio Load.\n"
       "# TYPE load_ratio gauge\n"
       "load_ratio 0.75\n"
       "# HELP sessions Open sessions.\n"
       "# TYPE sessions gauge\n"
       "sessions{transport=\"http\"} 2\n"},
      {"GaugeSpecialValues",
       [](metrics::Registry& registry) {
         registry.gauge("g", "", {{"v", "inf"}}).set(std::numeric_limits<double>::infinity());
         registry.gauge("g", "", {{"v", "minus_inf"}})
             .set(-std::numeric_limits<double>::infinity());
         registry.gauge("g", "", {{"v", "nan"}}).set(std::numeric_limits<double>::quiet_NaN());
       },
       "# TYPE g gauge\n"
       "g{v=\"inf\"} +Inf\n"
       "g{v=\"minus_inf\"} -Inf\n"
       "g{v=\"nan\"} NaN\n"},
      {"GaugeCallbackReadAtRender",
       [](metrics::Registry& registry) {
         registry.gaugeCallback("pool_size", "Warm sandboxes.", [] { return 7.0; });
         registry.gaugeCallback("pool_target", "Target.", [] { return 2.0; }, {{"image", "py"}});
       },
       "# HELP pool_size Warm sandboxes.\n"
       "# TYPE pool_size gauge\n"
       "pool_size 7\n"
       "# HELP pool_target Target.\n"
       "# TYPE pool_target gauge\n"
       "pool_target{image=\"py\"} 2\n"},
      {"CounterCallbackIsACounter",
       [](metrics::Registry& registry) {
         registry.counterCallback("engine_errors_total", "Engine errors.", [] { return 3.0; });
       },
       "# HELP engine_errors_total Engine errors.\n"
       "# TYPE engine_errors_total counter\n"
       "engine_errors_total 3\n"},
      {"GaugeCallbackThatThrowsIsLeftOut",
       [](metrics::Registry& registry) {
         registry.gaugeCallback("broken", "Broken.",
                                []() -> double { throw std::runtime_error("pool gone"); });
         registry.gaugeCallback("mixed", "Mixed.", [] { return 1.0; }, {{"k", "a"}});
         registry.gaugeCallback("mixed", "Mixed.", []() -> double { throw 42; }, {{"k", "b"}});
       },
       "# HELP broken Broken.\n"
       "# TYPE broken gauge\n"
       "# HELP mixed Mixed.\n"
       "# TYPE mixed gauge\n"
       "mixed{k=\"a\"} 1\n"},
      {"HistogramCumulativeBucketsWithBoundaryValues",
       [](metrics::Registry& registry) {
         auto& latency = registry.histogram("latency_seconds", "Latency.", {0.25, 0.5, 1});
         latency.observe(0.25);  // exactly on a bound: counts in that bucket
         latency.observe(0.5);
         latency.observe(0.75);
         latency.observe(3);
       },
       "# HELP latency_seconds Latency.\n"
       "# TYPE latency_seconds histogram\n"
       "latency_seconds_bucket{le=\"0.25\"} 1\n"
       "latency_seconds_bucket{le=\"0.5\"} 2\n"
       "latency_seconds_bucket{le=\"1\"} 3\n"
       "latency_seconds_bucket{le=\"+Inf\"} 4\n"
       "latency_seconds_sum 4.5\n"
       "latency_seconds_count 4\n"},
      {"HistogramDefaultBucketsWithLabelsPutLeLast",
       [](metrics::Registry& registry) {
         registry
             .histogram("call_seconds", "Call time.", metrics::defaultSecondsBuckets(),
                        {{"tool", "exec"}})
             .observe(0.005);
       },
       "# HELP call_seconds Call time.\n"
       "# TYPE call_seconds histogram\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.005\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.01\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.025\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.05\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.1\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.25\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"0.5\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"1\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"2.5\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"5\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"10\"} 1\n"
       "call_seconds_bucket{tool=\"exec\",le=\"+Inf\"} 1\n"
       "call_seconds_sum{tool=\"exec\"} 0.005\n"
       "call_seconds_count{tool=\"exec\"} 1\n"},
      {"HistogramWithoutBuckets",
       [](metrics::Registry& registry) { registry.histogram("h", "H.", {}).observe(-2); },
       "# HELP h H.\n"
       "# TYPE h histogram\n"
       "h_bucket{le=\"+Inf\"} 1\n"
       "h_sum -2\n"
       "h_count 1\n"},
      {"EscapesHelpAndLabelValues",
       [](metrics::Registry& registry) {
         registry
             .counter("escaped_total", "Line one\nback\\slash \"quoted\"",
                      {{"path", "C:\\tmp\n\"x\""}})
             .inc();
       },
       "# HELP escaped_total Line one\\nback\\\\slash \"quoted\"\n"
       "# TYPE escaped_total counter\n"
       "escaped_total{path=\"C:\\\\tmp\\n\\\"x\\\"\"} 1\n"},
      {"EmptyHelpHasNoHelpLine",
       [](metrics::Registry& registry) { registry.gauge("quiet", "").set(1); },
       "# TYPE quiet gauge\n"
       "quiet 1\n"},
      {"FamiliesSortedByNameNotRegistrationOrder",
       [](metrics::Registry& registry) {
         registry.gauge("zeta", "Z.").set(1);
         registry.counter("alpha_total", "A.").inc();
         registry.gauge("mid", "M.", {{"b", "2"}}).set(3);
         registry.gauge("mid", "M.", {{"b", "10"}}).set(4);  // label values sort as strings
       },
       "# HELP alpha_total A.\n"
       "# TYPE alpha_total counter\n"
       "alpha_total 1\n"
       "# HELP mid M.\n"
       "# TYPE mid gauge\n"
       "mid{b=\"10\"} 4\n"
       "mid{b=\"2\"} 3\n"
       "# HELP zeta Z.\n"
       "# TYPE zeta gauge\n"
       "zeta 1\n"},
  };
}

class RenderTable : public testing::TestWithParam<RenderRow> {};

TEST_P(RenderTable, ExactText) {
  metrics::Registry registry;
  GetParam().record(registry);
  EXPECT_EQ(registry.render(), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Metrics, RenderTable, testing::ValuesIn(renderRows()),
                         [](const testing::TestParamInfo<RenderRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(Metrics, GaugeCallbackRunsAtEachRender) {
  metrics::Registry registry;
  int calls = 0;
  registry.gaugeCallback("reads", "Reads.", [&calls] { return static_cast<double>(++calls); });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(registry.render(), "# HELP reads Reads.\n# TYPE reads gauge\nreads 1\n");
  EXPECT_EQ(registry.render(), "# HELP reads Reads.\n# TYPE reads gauge\nreads 2\n");
}

}  // namespace

namespace {

// A callback that takes a lock whose holder updates a metric meanwhile (the session registry's
// lock: a refusal is counted under it, and the sessions gauge reads under it) must not deadlock
// a render: callbacks run without the registry's lock.
TEST(Metrics, ACallbackTakingALockWhoseHolderUpdatesMetricsDoesNotDeadlock) {
  metrics::Registry registry;
  std::mutex owner_lock;
  int owned = 0;
  registry.gaugeCallback("owned", "Owned.", [&] {
    const std::lock_guard lock(owner_lock);
    return static_cast<double>(owned);
  });
  auto work = std::async(std::launch::async, [&] {
    std::thread updater([&] {
      for (int i = 0; i < 2000; ++i) {
        const std::lock_guard lock(owner_lock);
        ++owned;
        registry.counter("refusals_total", "Refusals.", {{"limit", "sessions"}}).inc();
      }
    });
    for (int i = 0; i < 2000; ++i) (void)registry.render();
    updater.join();
  });
  if (work.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "render() and an update under the callback's lock deadlocked";
    std::_Exit(1);  // the threads cannot be joined
  }
  EXPECT_NE(registry.render().find("refusals_total{limit=\"sessions\"} 2000\n"), std::string::npos);
}

}  // namespace
