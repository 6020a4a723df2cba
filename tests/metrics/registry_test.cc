// Registration: the same name and labels give the same object; conflicts and bad names throw and
// leave the registry as it was.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

TEST(Metrics, SameNameAndLabelsReturnSameObject) {
  metrics::Registry registry;
  auto& a = registry.counter("calls_total", "Calls.", {{"tool", "exec"}, {"result", "ok"}});
  auto& b = registry.counter("calls_total", "Calls.", {{"result", "ok"}, {"tool", "exec"}});
  auto& other = registry.counter("calls_total", "Calls.", {{"result", "error"}, {"tool", "exec"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &other);
  EXPECT_EQ(&registry.gauge("sessions", "S."), &registry.gauge("sessions", "S."));
  auto& h = registry.histogram("t_seconds", "T.", {1, 2}, {{"k", "v"}});
  EXPECT_EQ(&h, &registry.histogram("t_seconds", "T.", {1, 2}, {{"k", "v"}}));
  EXPECT_NE(&h, &registry.histogram("t_seconds", "T.", {1, 2}, {{"k", "w"}}));
}

TEST(Metrics, ReferencesStayValidAsTheRegistryGrows) {
  metrics::Registry registry;
  auto& first = registry.counter("first_total", "F.");
  first.inc();
  for (int i = 0; i < 1000; ++i) {
    registry.gauge("g" + std::to_string(i), "G.", {{"i", std::to_string(i)}}).set(i);
  }
  first.inc();
  EXPECT_EQ(&first, &registry.counter("first_total", "F."));
  EXPECT_EQ(first.value(), 2);
}

TEST(Metrics, TrailingInfBucketIsTheImplicitOne) {
  metrics::Registry registry;
  const double inf = std::numeric_limits<double>::infinity();
  auto& h = registry.histogram("h_seconds", "H.", {0.5, inf});
  EXPECT_EQ(&h, &registry.histogram("h_seconds", "H.", {0.5}));
  EXPECT_EQ(h.bounds(), std::vector<double>{0.5});
}

struct ConflictRow {
  std::string name;
  std::function<void(metrics::Registry&)> setup;
  std::function<void(metrics::Registry&)> bad;
};

std::ostream& operator<<(std::ostream& out, const ConflictRow& row) { return out << row.name; }

void nothing(metrics::Registry&) {}
double one() { return 1; }

// A function, not a global: building the rows may throw.
std::vector<ConflictRow> conflictRows() {
  return {
      {"CounterThenGauge", [](auto& r) { r.counter("x_total", "X."); },
       [](auto& r) { r.gauge("x_total", "X."); }},
      {"GaugeThenHistogram", [](auto& r) { r.gauge("x", "X."); },
       [](auto& r) { r.histogram("x", "X.", {1}); }},
      {"HistogramThenGaugeCallback", [](auto& r) { r.histogram("x", "X.", {1}); },
       [](auto& r) { r.gaugeCallback("x", "X.", one); }},
      {"OtherHelp", [](auto& r) { r.counter("x_total", "X."); },
       [](auto& r) { r.counter("x_total", "Other."); }},
      {"OtherHelpWithOtherLabels",
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}});
       },
       [](auto& r) {
         r.gauge("x", "Other.", {{"a", "2"}});
       }},
      {"OtherBuckets",
       [](auto& r) {
         r.histogram("x", "X.", {1, 2});
       },
       [](auto& r) {
         r.histogram("x", "X.", {1, 3}, {{"a", "1"}});
       }},
      {"OtherLabelNames",
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}});
       },
       [](auto& r) {
         r.gauge("x", "X.", {{"b", "1"}});
       }},
      {"ExtraLabelName",
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}});
       },
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}, {"b", "1"}});
       }},
      {"NoLabelsAfterLabels",
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}});
       },
       [](auto& r) { r.gauge("x", "X."); }},
      {"CallbackTwice", [](auto& r) { r.gaugeCallback("x", "X.", one); },
       [](auto& r) { r.gaugeCallback("x", "X.", one); }},
      {"GaugeObjectForCallback", [](auto& r) { r.gaugeCallback("x", "X.", one); },
       [](auto& r) { r.gauge("x", "X."); }},
      {"CallbackForGaugeObject", [](auto& r) { r.gauge("x", "X."); },
       [](auto& r) { r.gaugeCallback("x", "X.", one); }},
      {"EmptyCallback", nothing, [](auto& r) { r.gaugeCallback("x", "X.", nullptr); }},
      {"CounterWithoutTotalSuffix", nothing, [](auto& r) { r.counter("requests", "R."); }},
      {"EmptyMetricName", nothing, [](auto& r) { r.gauge("", "X."); }},
      {"MetricNameLeadingDigit", nothing, [](auto& r) { r.gauge("1x", "X."); }},
      {"MetricNameDash", nothing, [](auto& r) { r.counter("a-b_total", "X."); }},
      {"LabelNameDash", nothing,
       [](auto& r) {
         r.gauge("x", "X.", {{"a-b", "1"}});
       }},
      {"LabelNameReserved", nothing,
       [](auto& r) {
         r.gauge("x", "X.", {{"__name__", "1"}});
       }},
      {"LabelNameColon", nothing,
       [](auto& r) {
         r.counter("x_total", "X.", {{"a:b", "1"}});
       }},
      {"LabelNameTwice", nothing,
       [](auto& r) {
         r.gauge("x", "X.", {{"a", "1"}, {"a", "2"}});
       }},
      {"HistogramLeLabel", nothing,
       [](auto& r) {
         r.histogram("x", "X.", {1}, {{"le", "1"}});
       }},
      {"BucketsNotIncreasing", nothing,
       [](auto& r) {
         r.histogram("x", "X.", {1, 1});
       }},
      {"BucketsDecreasing", nothing,
       [](auto& r) {
         r.histogram("x", "X.", {2, 1});
       }},
      {"BucketNaN", nothing,
       [](auto& r) { r.histogram("x", "X.", {std::numeric_limits<double>::quiet_NaN()}); }},
      {"BucketInfNotLast", nothing,
       [](auto& r) {
         r.histogram("x", "X.", {std::numeric_limits<double>::infinity(), 1});
       }},
      {"BucketMinusInf", nothing,
       [](auto& r) { r.histogram("x", "X.", {-std::numeric_limits<double>::infinity()}); }},
  };
}

class ConflictTable : public testing::TestWithParam<ConflictRow> {};

TEST_P(ConflictTable, ThrowsAndLeavesNoTrace) {
  metrics::Registry registry;
  GetParam().setup(registry);
  const std::string before = registry.render();
  EXPECT_THROW(GetParam().bad(registry), std::invalid_argument);
  EXPECT_EQ(registry.render(), before);
}

INSTANTIATE_TEST_SUITE_P(Metrics, ConflictTable, testing::ValuesIn(conflictRows()),
                         [](const testing::TestParamInfo<ConflictRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(Metrics, ConflictMessageNamesTheMetricAndBothTypes) {
  metrics::Registry registry;
  registry.counter("x_total", "X.");
  try {
    registry.gauge("x_total", "X.");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "metric 'x_total' is already registered as a counter, not a gauge");
  }
}

}  // namespace
