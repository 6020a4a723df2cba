// What sandbox-mcp announces on listen streams (2026-07-28) and to resources/subscribe: changes
// to an owner's resource list (files its sessions saved for the client) and to the sandbox files
// it subscribed to, each only to that owner. Plus the product's prompt. FakeBackend sandboxes.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mcp/product_prompts.h"
#include "mcp_server_fixture.h"

namespace {

using jsonrpc::json;

json modernMeta() {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "t"}, {"version", "2"}}}};
}

TEST(Subscriptions, WhatConcernsAnOwnerReachesOnlyItsStreams) {
  mcp::Subscriptions hub(mcp::Announceable{false, false, true, true});
  const auto filter = mcp::ListenFilter::parse(
      {{"resourcesListChanged", true}, {"resourceSubscriptions", {"sandbox://s1/a", "other://x"}}},
      hub.offered());
  std::vector<json> alice;
  std::vector<json> bob;
  const auto a = hub.listen(
      1, filter, [&](const json& n) { alice.push_back(n); }, "alice");
  const auto b = hub.listen(
      2, filter, [&](const json& n) { bob.push_back(n); }, "bob");
  hub.resourcesChanged("alice");
  hub.resourceUpdated("sandbox://s1/a", "alice");
  EXPECT_EQ(alice.size(), 2u);
  EXPECT_TRUE(bob.empty()) << "bob subscribed to the same URI, but it is alice's";
  hub.resourcesChanged();  // no audience: everyone's
  EXPECT_EQ(alice.size(), 3u);
  EXPECT_EQ(bob.size(), 1u);
  EXPECT_EQ(hub.subscribedUris("alice", "sandbox://s1/"),
            (std::set<std::string>{"sandbox://s1/a"}));
  EXPECT_TRUE(hub.subscribedUris("carol", "sandbox://").empty());
  hub.stop(a);
  hub.stop(b);
}

// A listen stream of `ep`, recording what it is sent; closes the endpoint's streams on close().
class ListenStream {
 public:
  ListenStream(jsonrpc::Endpoint& ep, int id, const json& notifications) {
    const json message{{"jsonrpc", "2.0"},
                       {"id", id},
                       {"method", "subscriptions/listen"},
                       {"params", {{"_meta", modernMeta()}, {"notifications", notifications}}}};
    ctx_.cancel = ep.admit(message);
    ctx_.notify = [this](const json& n) {
      std::lock_guard lock(mutex_);
      sent_.push_back(n);
    };
    ctx_.answer_later = [this](std::optional<json> response) {
      std::lock_guard lock(mutex_);
      answer_ = std::move(response);
    };
    EXPECT_FALSE(ep.handle(message, ctx_));
  }
  ~ListenStream() { ctx_.cancel->cancel(); }
  ListenStream(const ListenStream&) = delete;
  ListenStream& operator=(const ListenStream&) = delete;

  // The methods sent after the acknowledgement, with the URI of resources/updated.
  std::vector<std::string> received() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const json& n : sent_) {
      if (n["method"] == "notifications/subscriptions/acknowledged") continue;
      const std::string uri = n["params"].value("uri", "");
      out.push_back(n["method"].get<std::string>() + (uri.empty() ? "" : " " + uri));
    }
    return out;
  }
  json acknowledged() {
    std::lock_guard lock(mutex_);
    return sent_.empty() ? json() : sent_.front();
  }

 private:
  std::mutex mutex_;
  jsonrpc::RequestContext ctx_;
  std::vector<json> sent_;
  std::optional<json> answer_;
};

using ProductAnnouncements = mcp_test::McpServerTest;

TEST_F(ProductAnnouncements, ResourceChangesReachTheirOwnerOnly) {
  const json caps =
      request(*endpoint, "server/discover", {{"_meta", modernMeta()}})["result"]["capabilities"];
  EXPECT_EQ(caps["resources"], (json{{"subscribe", true}, {"listChanged", true}})) << caps;

  initialize(*endpoint);
  const std::string s = newSession(*endpoint);
  const std::string data_uri = "sandbox://" + s + "/workspace/data.txt";
  const std::string figure_uri = "sandbox://" + s + "/tmp/.sandbox-mcp/figures/figure-1-1.png";
  auto bob_endpoint = server->open("owner-b");
  ListenStream alice(
      *endpoint, 7,
      {{"resourcesListChanged", true}, {"resourceSubscriptions", {data_uri, figure_uri}}});
  ListenStream bob(*bob_endpoint, 8,
                   {{"resourcesListChanged", true}, {"resourceSubscriptions", {data_uri}}});
  EXPECT_EQ(alice.acknowledged()["params"]["notifications"],
            (json{{"resourcesListChanged", true},
                  {"resourceSubscriptions", {figure_uri, data_uri}}}));  // sorted

  // A file the client subscribed to appears, then changes; an unrelated call changes nothing.
  // (bob's stream names the same file: only its owner's calls look at it, and tell only alice.)
  const json upload = {{"session_id", s}, {"path", "/workspace/data.txt"}, {"content", "1"}};
  EXPECT_FALSE(call(*endpoint, "upload_file", upload)["isError"]);
  EXPECT_FALSE(call(*endpoint, "run_code", {{"session_id", s}, {"code", "x = 1"}})["isError"]);
  json again = upload;
  again["content"] = "12";
  EXPECT_FALSE(call(*endpoint, "upload_file", again)["isError"]);
  // A figure is a file the session saves for the client: the list changes, once. (The fake saves
  // no figure file: its updates are the watched files', as the upload above showed.)
  EXPECT_FALSE(call(*endpoint, "run_code", {{"session_id", s}, {"code", "figure"}})["isError"]);
  EXPECT_FALSE(call(*endpoint, "run_code", {{"session_id", s}, {"code", "figure"}})["isError"]);
  EXPECT_FALSE(call(*endpoint, "cleanup_session", {{"session_id", s}})["isError"]);
  EXPECT_EQ(alice.received(),
            (std::vector<std::string>{"notifications/resources/updated " + data_uri,
                                      "notifications/resources/updated " + data_uri,
                                      "notifications/resources/list_changed",
                                      "notifications/resources/list_changed"}));
  EXPECT_TRUE(bob.received().empty()) << "bob named alice's file, and learnt nothing of it";
}

// Each watched file costs a directory listing after every call into its session: one owner's
// subscriptions are looked at up to mcp::SandboxFileWatch::kMaxWatchedPerOwner files, no further.
TEST_F(ProductAnnouncements, AnOwnerWatchesAtMostItsShareOfFiles) {
  initialize(*endpoint);
  const std::string s = newSession(*endpoint);
  const std::size_t cap = mcp::SandboxFileWatch::kMaxWatchedPerOwner;
  const auto uri = [&s](std::size_t i) {
    return "sandbox://" + s + "/workspace/f" + std::to_string(1000 + i);  // sorted as numbered
  };
  json uris = json::array();
  for (std::size_t i = 0; i <= cap; ++i) uris.push_back(uri(i));
  ListenStream stream(*endpoint, 9, {{"resourceSubscriptions", uris}});
  const auto write = [&](std::size_t i) {
    const std::string path = "/workspace/f" + std::to_string(1000 + i);
    EXPECT_FALSE(call(*endpoint, "upload_file",
                      {{"session_id", s}, {"path", path}, {"content", "x"}})["isError"]);
  };
  write(cap);  // the one past the cap: not looked at
  write(0);
  EXPECT_EQ(stream.received(),
            (std::vector<std::string>{"notifications/resources/updated " + uri(0)}));
}

// 2025-11-25 has no listen streams: over stdio (notifications may follow a request) list changes
// go to the client unasked and resources/subscribe works; over HTTP (no GET stream here) the
// capabilities say neither is offered.
TEST_F(ProductAnnouncements, A2025ClientHearsOfChangesOnlyWhereTheyCanReachIt) {
  const json init{{"protocolVersion", "2025-11-25"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}};
  std::mutex mutex;
  std::vector<json> sent;
  jsonrpc::RequestContext stdio;
  stdio.notify_outlives_request = true;
  stdio.notify = [&](const json& n) {
    std::lock_guard lock(mutex);
    sent.push_back(n);
  };
  const auto reply = endpoint->handle(
      {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", init}}, stdio);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["result"]["capabilities"]["resources"],
            (json{{"subscribe", true}, {"listChanged", true}}));
  const std::string s = newSession(*endpoint);
  const std::string uri = "sandbox://" + s + "/workspace/a.txt";
  const auto subscribed = endpoint->handle({{"jsonrpc", "2.0"},
                                            {"id", 2},
                                            {"method", "resources/subscribe"},
                                            {"params", {{"uri", uri}}}},
                                           stdio);
  ASSERT_TRUE(subscribed);
  EXPECT_TRUE((*subscribed).contains("result")) << *subscribed;
  (void)call(*endpoint, "run_code", {{"session_id", s}, {"code", "figure"}});
  (void)call(*endpoint, "upload_file",
             {{"session_id", s}, {"path", "/workspace/a.txt"}, {"content", "x"}});
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0], (json{{"jsonrpc", "2.0"},
                             {"method", "notifications/resources/list_changed"},
                             {"params", json::object()}}));
    EXPECT_EQ(sent[1]["method"], "notifications/resources/updated");
    EXPECT_EQ(sent[1]["params"]["uri"], uri);
  }

  auto http = server->open("owner-http");
  jsonrpc::RequestContext post;
  post.notify = [](const json&) {};
  const auto over_http = http->handle(
      {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", init}}, post);
  ASSERT_TRUE(over_http);
  EXPECT_EQ((*over_http)["result"]["capabilities"]["resources"],
            (json{{"subscribe", false}, {"listChanged", false}}));
}

TEST_F(ProductAnnouncements, ExploreDataPromptRendersTheFileAndTheQuestion) {
  const mcp::PromptCatalog prompts = mcp::productPrompts();
  mcp::ServerFeatures features;
  features.prompts = &prompts;
  mcp::McpServer product(cfg, *sessions, registry, nullptr, {}, features);
  const auto ep = product.open("owner-c");
  initialize(*ep);
  const json listed = request(*ep, "prompts/list")["result"];
  ASSERT_EQ(listed["prompts"].size(), 1u) << listed;
  EXPECT_EQ(listed["prompts"][0]["name"], "explore_data");
  const json got = request(*ep, "prompts/get",
                           {{"name", "explore_data"},
                            {"arguments", {{"file", "sales.csv"}, {"question", "Which month?"}}}});
  const std::string text = got["result"]["messages"][0]["content"]["text"];
  EXPECT_NE(text.find("sales.csv"), std::string::npos) << text;
  EXPECT_NE(text.find("Which month?"), std::string::npos) << text;
  EXPECT_NE(text.find("upload_file"), std::string::npos) << text;
  const json missing = request(*ep, "prompts/get", {{"name", "explore_data"}});
  EXPECT_EQ(missing["error"]["code"], -32602) << missing;
}

}  // namespace
