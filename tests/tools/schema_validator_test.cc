#include "tools/schema_validator.h"

#include <gtest/gtest.h>

namespace {

using nlohmann::json;

const json kSchema = {
    {"type", "object"},
    {"properties",
     {{"code", {{"type", "string"}, {"maxLength", 5}}},
      {"timeout", {{"type", "integer"}, {"minimum", 1}, {"maximum", 600}}},
      {"encoding", {{"type", "string"}, {"enum", {"utf-8", "base64"}}}},
      {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
      {"list", {{"type", "array"}, {"maxItems", 3}, {"items", {{"type", "string"}}}}},
      {"result", {{"type", {"string", "null"}}}}}},
    {"required", {"code"}},
    {"additionalProperties", false}};

struct Row {
  const char* name;
  json value;
  const char* expected;  // empty: valid
};

TEST(SchemaValidator, Table) {
  const Row rows[] = {
      {"minimal", {{"code", "x"}}, ""},
      {"all fields",
       {{"code", "x"},
        {"timeout", 5},
        {"encoding", "base64"},
        {"env", {{"A", "b"}}},
        {"list", {"a"}},
        {"result", nullptr}},
       ""},
      {"missing required", json::object(), "arguments: missing required property \"code\""},
      {"wrong type", {{"code", 1}}, "arguments.code: must be a string (got integer)"},
      {"float for integer",
       {{"code", "x"}, {"timeout", 1.5}},
       "arguments.timeout: must be an integer (got number)"},
      {"below minimum", {{"code", "x"}, {"timeout", 0}}, "arguments.timeout: must be >= 1 (got 0)"},
      {"above maximum",
       {{"code", "x"}, {"timeout", 900}},
       "arguments.timeout: must be <= 600 (got 900)"},
      {"enum",
       {{"code", "x"}, {"encoding", "latin1"}},
       "arguments.encoding: must be one of [\"utf-8\",\"base64\"] (got \"latin1\")"},
      {"too long",
       {{"code", "123456"}},
       "arguments.code: must be at most 5 characters long (got 6)"},
      {"unknown property",
       {{"code", "x"}, {"cod", 1}},
       "arguments.cod: unknown property (allowed: code, encoding, env, list, result, timeout)"},
      {"additionalProperties schema",
       {{"code", "x"}, {"env", {{"A", 1}}}},
       "arguments.env.A: must be a string (got integer)"},
      {"array items",
       {{"code", "x"}, {"list", {"a", 2}}},
       "arguments.list[1]: must be a string (got integer)"},
      {"too many items",
       {{"code", "x"}, {"list", {"a", "b", "c", "d"}}},
       "arguments.list: must have at most 3 items (got 4)"},
      {"type union",
       {{"code", "x"}, {"result", 3}},
       "arguments.result: must be one of the types [\"string\",\"null\"] (got integer)"},
      {"not an object", json::array(), "arguments: must be an object (got array)"},
  };
  for (const auto& row : rows) {
    const auto error = tools::validateAgainstSchema(row.value, kSchema, "arguments");
    if (std::string(row.expected).empty()) {
      EXPECT_FALSE(error) << row.name << ": " << error.value_or("");
    } else {
      ASSERT_TRUE(error) << row.name;
      EXPECT_EQ(*error, row.expected) << row.name;
    }
  }
}

}  // namespace
