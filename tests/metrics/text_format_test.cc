// Tables for the exposition format's numbers and escapes, and for the metric and label name rules.
#include "metrics/text_format.h"

#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "metrics/names.h"

namespace {

struct ValueRow {
  std::string name;
  double value;
  std::string expected;
};

std::ostream& operator<<(std::ostream& out, const ValueRow& row) { return out << row.name; }

constexpr double kInf = std::numeric_limits<double>::infinity();

// A function, not a global: building the rows may throw.
std::vector<ValueRow> valueRows() {
  return {
      {"Zero", 0.0, "0"},
      {"NegativeZero", -0.0, "0"},
      {"One", 1.0, "1"},
      {"NegativeInteger", -3.0, "-3"},
      {"MillionWithoutExponent", 1e6, "1000000"},
      {"LargestExactIntegerBelow2Pow53", 9007199254740991.0, "9007199254740991"},
      {"HugeUsesExponent", 1e20, "1e+20"},
      {"Half", 2.5, "2.5"},
      {"FiveMilliseconds", 0.005, "0.005"},
      {"OneTenth", 0.1, "0.1"},
      {"ShortestRoundTrip", 1.0 / 3.0, "0.3333333333333333"},
      {"FractionalLarge", 123456.789, "123456.789"},
      {"Tiny", 1e-9, "1e-09"},
      {"NegativeFraction", -0.25, "-0.25"},
      {"PositiveInfinity", kInf, "+Inf"},
      {"NegativeInfinity", -kInf, "-Inf"},
      {"NotANumber", std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
}

class FormatValueTable : public testing::TestWithParam<ValueRow> {};

TEST_P(FormatValueTable, Text) {
  EXPECT_EQ(metrics::formatValue(GetParam().value), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Metrics, FormatValueTable, testing::ValuesIn(valueRows()),
                         [](const testing::TestParamInfo<ValueRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(Metrics, EscapeHelpEscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(metrics::escapeHelp("plain"), "plain");
  EXPECT_EQ(metrics::escapeHelp("a\\b\nc \"q\""), "a\\\\b\\nc \"q\"");
}

TEST(Metrics, EscapeLabelValueEscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(metrics::escapeLabelValue("plain"), "plain");
  EXPECT_EQ(metrics::escapeLabelValue("a\\b\nc \"q\""), "a\\\\b\\nc \\\"q\\\"");
  EXPECT_EQ(metrics::escapeLabelValue("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
}

TEST(Metrics, ContentTypeIsTextFormat004) {
  EXPECT_STREQ(metrics::kContentType, "text/plain; version=0.0.4; charset=utf-8");
}

struct NameRow {
  std::string name;
  std::string text;
  bool valid_metric;
  bool valid_label;
};

std::ostream& operator<<(std::ostream& out, const NameRow& row) { return out << row.name; }

// A function, not a global: building the rows may throw.
std::vector<NameRow> nameRows() {
  return {
      {"Lowercase", "requests", true, true},
      {"Underscores", "http_requests_total", true, true},
      {"LeadingUnderscore", "_private", true, true},
      {"SingleUnderscore", "_", true, true},
      {"Digits", "tool9", true, true},
      {"Uppercase", "Requests", true, true},
      {"ColonInside", "job:requests:rate5m", true, false},
      {"LeadingColon", ":requests", true, false},
      {"DoubleUnderscore", "__name__", true, false},
      {"DoubleUnderscorePrefix", "__meta", true, false},
      {"Empty", "", false, false},
      {"LeadingDigit", "9lives", false, false},
      {"Dash", "a-b", false, false},
      {"Dot", "a.b", false, false},
      {"Space", "a b", false, false},
      {"NonAscii", "caf\xc3\xa9", false, false},
  };
}

class NameTable : public testing::TestWithParam<NameRow> {};

TEST_P(NameTable, Rules) {
  EXPECT_EQ(metrics::isValidMetricName(GetParam().text), GetParam().valid_metric);
  EXPECT_EQ(metrics::isValidLabelName(GetParam().text), GetParam().valid_label);
}

INSTANTIATE_TEST_SUITE_P(Metrics, NameTable, testing::ValuesIn(nameRows()),
                         [](const testing::TestParamInfo<NameRow>& row_info) {
                           return row_info.param.name;
                         });

}  // namespace
