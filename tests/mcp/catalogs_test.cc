// The catalogs an McpServer may offer beside its tools: prompts (arguments checked), resources
// (URI templates matched), completions (prefix, order, cap) and listen streams (filters).
#include <gtest/gtest.h>

#include "jsonrpc/errors.h"
#include "mcp/completions.h"
#include "mcp/prompt_catalog.h"
#include "mcp/resource_catalog.h"
#include "mcp/subscriptions.h"

namespace {

using nlohmann::json;

TEST(Catalogs, UriTemplatesMatchOneSegmentPerVariable) {
  using mcp::matchUriTemplate;
  const auto vars = matchUriTemplate("test://template/{id}/data", "test://template/42/data");
  ASSERT_TRUE(vars);
  EXPECT_EQ(vars->at("id"), "42");
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template/4/2/data"));
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template//data"));
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template/42/data/x"));
  const auto two = matchUriTemplate("x://{a}-{b}", "x://left-right");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->at("a"), "left");
  EXPECT_EQ(two->at("b"), "right");
}

TEST(Catalogs, ResourcesReadFixedThenTemplates) {
  mcp::ResourceCatalog catalog;
  catalog.add(mcp::FixedResource{{{"uri", "x://a"}, {"name", "a"}}, [](const std::string& uri) {
                                   return json::array({{{"uri", uri}, {"text", "A"}}});
                                 }});
  catalog.add(mcp::TemplateResource{
      {{"uriTemplate", "x://t/{n}"}, {"name", "t"}},
      [](const std::string& uri, const std::map<std::string, std::string>& v) {
        return json::array({{{"uri", uri}, {"text", v.at("n")}}});
      }});
  EXPECT_EQ(catalog.list().size(), 1u);
  EXPECT_EQ(catalog.templates()[0]["uriTemplate"], "x://t/{n}");
  EXPECT_EQ((*catalog.read("x://a"))["contents"][0]["text"], "A");
  EXPECT_EQ((*catalog.read("x://t/7"))["contents"][0]["text"], "7");
  EXPECT_FALSE(catalog.read("x://nothing"));
  EXPECT_THROW(catalog.add(mcp::FixedResource{{{"uri", "x://a"}}, nullptr}), std::logic_error);
}

TEST(Catalogs, PromptArgumentsAreCheckedAgainstTheSpec) {
  mcp::PromptCatalog catalog;
  catalog.add({{"p", "P", "a prompt", {{"req", "needed", true}, {"opt", "", false}}},
               [](const json&, const tools::ToolInputs&) { return mcp::PromptResult{}; }});
  const mcp::Prompt& prompt = *catalog.find("p");
  EXPECT_EQ(mcp::PromptCatalog::argumentsProblem(prompt, {{"req", "x"}}), "");
  EXPECT_NE(mcp::PromptCatalog::argumentsProblem(prompt, json::object()), "");
  EXPECT_NE(mcp::PromptCatalog::argumentsProblem(prompt, {{"req", 1}}), "");
  EXPECT_NE(mcp::PromptCatalog::argumentsProblem(prompt, json::array()), "");
  const json listed = catalog.list()["prompts"][0];
  EXPECT_EQ(listed["name"], "p");
  EXPECT_EQ(listed["arguments"][0],
            (json{{"name", "req"}, {"required", true}, {"description", "needed"}}));
  EXPECT_THROW(catalog.add({{"p", "", "", {}}, nullptr}), std::logic_error);
}

TEST(Catalogs, CompletionsFilterByPrefixInOrder) {
  mcp::Completions completions;
  completions.add("ref/prompt", "p", "city", [](const json&) {
    return std::vector<std::string>{"paris", "park", "rome", "party"};
  });
  const json got = completions.complete({{"ref", {{"type", "ref/prompt"}, {"name", "p"}}},
                                         {"argument", {{"name", "city"}, {"value", "par"}}}});
  EXPECT_EQ(got["completion"]["values"], (json{"paris", "park", "party"}));
  EXPECT_EQ(got["completion"]["total"], 3);
  EXPECT_EQ(got["completion"]["hasMore"], false);
  const json none = completions.complete({{"ref", {{"type", "ref/prompt"}, {"name", "q"}}},
                                          {"argument", {{"name", "city"}, {"value", ""}}}});
  EXPECT_TRUE(none["completion"]["values"].empty());
  EXPECT_THROW((void)completions.complete({{"ref", "x"}}), jsonrpc::Error);
  EXPECT_THROW((void)completions.complete({{"ref", {{"type", "ref/other"}}}}), jsonrpc::Error);
}

TEST(Catalogs, ListenStreamsGetOnlyWhatTheyAskedAndTheServerOffers) {
  mcp::Subscriptions hub(mcp::Announceable{true, true, false, false});
  const auto filter = mcp::ListenFilter::parse(
      {{"promptsListChanged", true}, {"resourcesListChanged", true}, {"other", true}},
      hub.offered());
  EXPECT_EQ(filter.toJson(), (json{{"promptsListChanged", true}}));
  std::vector<json> got;
  const auto key = hub.listen(17, filter, [&](const json& n) { got.push_back(n); });
  hub.toolsChanged();
  hub.promptsChanged();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["method"], "notifications/prompts/list_changed");
  EXPECT_EQ(got[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 17);
  hub.stop(key);
  hub.promptsChanged();
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(hub.size(), 0u);
  EXPECT_THROW((void)mcp::ListenFilter::parse(json(), hub.offered()), jsonrpc::Error);
}

}  // namespace
