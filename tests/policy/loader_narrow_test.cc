// loadPolicy validation errors and narrow(): a per-call list narrows the operator's, never widens.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/policy.h"

namespace {

using nlohmann::json;

struct LoaderRow {
  std::string name;
  std::string entries;
  std::string error;  // substring of the PolicyError message
};

std::ostream& operator<<(std::ostream& out, const LoaderRow& row) { return out << row.name; }

const std::vector<LoaderRow> kLoaderRows = {
    {"NotAnArray", R"({"url": "http://h/"})", "allowlist: must be an array"},
    {"EntryNotStringOrObject", R"([42])", "allowlist[0]: must be a URL string or an object"},
    {"UnparsableUrl", R"(["http://a@b/"])", "allowlist[0]: userinfo"},
    {"UnparsableUrlInObject", R"([{"url": "ftp://h/"}])", "allowlist[0].url: unsupported scheme"},
    {"UrlNotString", R"([{"url": 5}])", "allowlist[0].url: must be a URL string"},
    {"UrlWithQuery", R"(["http://h/mcp?x=1"])", "cannot carry a query"},
    {"MissingUrl", R"([{"id": "x"}])", "allowlist[0]: missing 'url'"},
    {"UnknownKey", R"([{"url": "http://h/", "method": ["ping"]}])", "unknown key 'method'"},
    {"DuplicateUrlAfterCanonicalization", R"(["http://h/mcp", "HTTP://H.:80/x/../mcp"])",
     "allowlist[1]: duplicates allowlist[0] (http://h/mcp)"},
    {"DuplicateId", R"([{"url": "http://a/", "id": "x"}, {"url": "http://b/", "id": "x"}])",
     "allowlist[1]: duplicate id 'x'"},
    {"EmptyId", R"([{"url": "http://a/", "id": ""}])", "allowlist[0].id: must be a non-empty"},
    {"MethodsNotArray", R"([{"url": "http://a/", "methods": "ping"}])",
     "allowlist[0].methods: must be an array"},
    {"MethodNotString", R"([{"url": "http://a/", "methods": ["ping", 3]}])",
     "allowlist[0].methods[1]: must be a non-empty string"},
    {"EmptyMethods", R"([{"url": "http://a/", "methods": []}])", "must not be empty"},
    {"ToolsWithoutToolsCall",
     R"([{"url": "http://a/", "methods": ["tools/list"], "tools": ["s"]}])",
     "'tools' is set but 'methods' does not include tools/call"},
};

class LoaderErrorTable : public testing::TestWithParam<LoaderRow> {};

TEST_P(LoaderErrorTable, Rejects) {
  const LoaderRow& row = GetParam();
  try {
    (void)policy::loadPolicy(json::parse(row.entries));
    FAIL() << "expected PolicyError containing '" << row.error << "'";
  } catch (const policy::PolicyError& error) {
    EXPECT_NE(std::string(error.what()).find(row.error), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Unit, LoaderErrorTable, testing::ValuesIn(kLoaderRows),
                         [](const testing::TestParamInfo<LoaderRow>& row_info) {
                           return row_info.param.name;
                         });

TEST(Unit, LoaderBuildsRulesWithIdsAndLists) {
  const auto loaded = policy::loadPolicy(json::parse(R"([
    "http://localhost:8265/mcp",
    {"url": "https://t.example/mcp", "id": "t", "methods": ["tools/call", "tools/call"],
     "tools": ["search"]}])"));
  ASSERT_EQ(loaded->rules.size(), 2U);
  EXPECT_EQ(loaded->rules[0].id, "allowlist[0]");
  EXPECT_EQ(loaded->rules[0].base.toString(), "http://localhost:8265/mcp");
  EXPECT_TRUE(loaded->rules[0].methods.empty());
  EXPECT_EQ(loaded->rules[1].id, "t");
  EXPECT_EQ(loaded->rules[1].methods, std::vector<std::string>{"tools/call"});  // deduplicated
  EXPECT_EQ(loaded->rules[1].tools, std::vector<std::string>{"search"});
}

TEST(Unit, LoaderAcceptsEmptyList) {
  EXPECT_TRUE(policy::loadPolicy(json::array())->rules.empty());
}

std::shared_ptr<const policy::Policy> operatorPolicy() {
  return policy::loadPolicy(json::parse(R"([
    {"url": "http://localhost:8265/mcp", "id": "op-local"},
    {"url": "https://t.example/mcp", "id": "op-tools", "methods": ["tools/list", "tools/call"],
     "tools": ["search", "fetch"]}])"));
}

std::string narrowError(const std::string& requested) {
  try {
    (void)policy::narrow(*operatorPolicy(), *policy::loadPolicy(json::parse(requested)));
  } catch (const policy::PolicyError& error) {
    return error.what();
  }
  return "no error";
}

TEST(Unit, NarrowAcceptsSubPathOfOperatorRule) {
  const auto effective = policy::narrow(
      *operatorPolicy(), *policy::loadPolicy(json::array({"http://localhost:8265/mcp/a"})));
  ASSERT_EQ(effective->rules.size(), 1U);
  EXPECT_EQ(effective->rules[0].base.toString(), "http://localhost:8265/mcp/a");
  EXPECT_TRUE(policy::decideUrl(*effective, "http://localhost:8265/mcp/a/b").allowed());
  // Narrowed: the operator's wider prefix is no longer reachable through this call's list.
  EXPECT_FALSE(policy::decideUrl(*effective, "http://localhost:8265/mcp/b").allowed());
}

TEST(Unit, NarrowRefusesUrlOperatorDidNotAllow) {
  EXPECT_NE(
      narrowError(R"(["http://evil.com/mcp"])")
          .find("allowlist[0]: http://evil.com/mcp is not covered by the operator's allowlist"),
      std::string::npos);
  EXPECT_NE(narrowError(R"(["http://localhost:8265/"])").find("not covered"), std::string::npos);
  EXPECT_NE(narrowError(R"(["http://localhost:8265/mcpx"])").find("not covered"),
            std::string::npos);
  EXPECT_NE(narrowError(R"(["https://localhost:8265/mcp"])").find("not covered"),
            std::string::npos);
}

TEST(Unit, NarrowInheritsOperatorMethodsAndTools) {
  const auto effective = policy::narrow(
      *operatorPolicy(), *policy::loadPolicy(json::array({"https://t.example/mcp"})));
  ASSERT_EQ(effective->rules.size(), 1U);
  EXPECT_EQ(effective->rules[0].methods, (std::vector<std::string>{"tools/list", "tools/call"}));
  EXPECT_EQ(effective->rules[0].tools, (std::vector<std::string>{"search", "fetch"}));
}

TEST(Unit, NarrowKeepsNarrowerRequestedLists) {
  const auto effective = policy::narrow(
      *operatorPolicy(), *policy::loadPolicy(json::parse(
                             R"([{"url": "https://t.example/mcp", "methods": ["tools/call", "ping"],
               "tools": ["search"]}])")));
  ASSERT_EQ(effective->rules.size(), 1U);
  EXPECT_EQ(effective->rules[0].tools, std::vector<std::string>{"search"});
  const policy::Decision denied = policy::decideMcpCall(
      effective->rules[0],
      json::parse(R"({"id":1,"method":"tools/call","params":{"name":"fetch"}})"));
  EXPECT_FALSE(denied.allowed());
  EXPECT_NE(denied.reason.find("tool 'fetch'"), std::string::npos);
}

TEST(Unit, NarrowRefusesWiderMethodsOrTools) {
  EXPECT_NE(narrowError(R"([{"url": "https://t.example/mcp", "methods": ["resources/read"]}])")
                .find("allowlist[0]: method 'resources/read' is not allowed by operator rule "
                      "op-tools"),
            std::string::npos);
  EXPECT_NE(narrowError(R"([{"url": "https://t.example/mcp", "tools": ["exec"]}])")
                .find("tool 'exec' is not allowed by operator rule op-tools"),
            std::string::npos);
}

TEST(Unit, NarrowOfEmptyRequestDeniesEverything) {
  const auto effective = policy::narrow(*operatorPolicy(), policy::Policy{});
  EXPECT_TRUE(effective->rules.empty());
  EXPECT_FALSE(policy::decideUrl(*effective, "http://localhost:8265/mcp").allowed());
}

}  // namespace
