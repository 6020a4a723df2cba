// Session files as MCP resources: the sandbox:// URI form (table tests) and resources/* through
// an endpoint over the fake backend (ownership, ranges, text vs blob, errors).
#include "mcp/session_resources.h"

#include <gtest/gtest.h>

#include "common/base64.h"
#include "common/png_check.h"
#include "fake_backend.h"
#include "jsonrpc/errors.h"
#include "mcp/mcp_server.h"
#include "server/sandbox_uri.h"
#include "tools/builtin_tools.h"

namespace {

using jsonrpc::json;
using server::makeSandboxUri;
using server::parseSandboxUri;

TEST(SandboxUri, RoundTripsPathsAndSessionIds) {
  struct Case {
    const char* session;
    const char* path;
    const char* uri;
  };
  const Case cases[] = {
      {"abc", "/workspace/out.txt", "sandbox://abc/workspace/out.txt"},
      {"my session", "/tmp/a b/ü.csv", "sandbox://my%20session/tmp/a%20b/%C3%BC.csv"},
      {"s/1?x", "/x#y?z", "sandbox://s%2F1%3Fx/x%23y%3Fz"},
      {"s", "/", "sandbox://s/"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(makeSandboxUri(c.session, c.path), c.uri);
    if (std::string(c.path) == "/") continue;  // no file named: refused when read
    const auto parsed = parseSandboxUri(c.uri);
    EXPECT_EQ(parsed.session_id, c.session) << c.uri;
    EXPECT_EQ(parsed.path, c.path) << c.uri;
    EXPECT_FALSE(parsed.offset);
    EXPECT_FALSE(parsed.length);
  }
}

TEST(SandboxUri, ReadsTheRangeQuery) {
  auto parsed = parseSandboxUri("sandbox://s/workspace/big.log?offset=1048576&length=65536");
  EXPECT_EQ(parsed.path, "/workspace/big.log");
  EXPECT_EQ(parsed.offset, 1048576U);
  EXPECT_EQ(parsed.length, 65536U);
  parsed = parseSandboxUri("sandbox://s/f?length=10#fragment");
  EXPECT_FALSE(parsed.offset);
  EXPECT_EQ(parsed.length, 10U);
}

TEST(SandboxUri, RefusesMalformedUrisWithTheExpectedForm) {
  const char* bad[] = {
      "file:///etc/passwd",                            // another scheme
      "sandbox://",                                    // nothing
      "sandbox://s",                                   // no path
      "sandbox:///etc/passwd",                         // no session
      "sandbox://s/",                                  // no file
      "sandbox://s/f?offset=-1",                       // negative
      "sandbox://s/f?offset=1x",                       // not a number
      "sandbox://s/f?offset=99999999999999999999999",  // overflow
      "sandbox://s/f?offset=1&offset=2",               // twice
      "sandbox://s/f?mode=w",                          // unknown parameter
      "sandbox://s/f?length=0",                        // a range of nothing: its own next
      "sandbox://s/f?offset=3&length=0",               // the same, further on
      "sandbox://s/f%2",                               // cut escape
      "sandbox://s/f%zz",                              // bad escape
      "sandbox://s/f%00.txt",                          // NUL
  };
  for (const char* uri : bad) {
    try {
      (void)parseSandboxUri(uri);
      ADD_FAILURE() << uri << " was accepted";
    } catch (const server::SandboxUriError& e) {
      EXPECT_NE(std::string(e.what()).find("expected sandbox://{session_id}/{path}"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW((void)parseSandboxUri("sandbox://s/" + std::string(9000, 'a')),
               server::SandboxUriError);
  try {
    (void)parseSandboxUri("sandbox://s/f?length=0");
    ADD_FAILURE() << "length=0 was accepted";
  } catch (const server::SandboxUriError& e) {
    EXPECT_NE(std::string(e.what()).find("length must be at least 1 (leave it out"),
              std::string::npos)
        << e.what();
  }
}

TEST(GuessMimeType, ByExtensionThenByContent) {
  EXPECT_EQ(mcp::guessMimeType("/w/data.CSV", true), "text/csv");
  EXPECT_EQ(mcp::guessMimeType("/w/plot.png", false), "image/png");
  EXPECT_EQ(mcp::guessMimeType("/w/notes", true), "text/plain");
  EXPECT_EQ(mcp::guessMimeType("/w.d/blob", false), "application/octet-stream");
}

class SessionResourcesTest : public ::testing::Test {
 protected:
  SessionResourcesTest() {
    cfg.pool.size = 0;
    cfg.resources.max_read_bytes = 1024;
    tools::registerBuiltinTools(registry, cfg);
    sessions = std::make_unique<server::SessionRegistry>(
        cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    server = std::make_unique<mcp::McpServer>(cfg, *sessions, registry);
    alice = server->open("alice");
    mallory = server->open("mallory");
    for (auto* ep : {alice.get(), mallory.get()}) {
      request(*ep, "initialize", {{"protocolVersion", "2025-11-25"}});
    }
  }

  json request(jsonrpc::Endpoint& ep, const std::string& method, json params = json::object()) {
    jsonrpc::RequestContext ctx;
    auto reply = ep.handle(
        {{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", params}}, ctx);
    EXPECT_TRUE(reply);
    return reply.value_or(json());
  }
  json call(jsonrpc::Endpoint& ep, const std::string& tool, json arguments) {
    return request(ep, "tools/call",
                   {{"name", tool}, {"arguments", std::move(arguments)}})["result"];
  }
  json read(jsonrpc::Endpoint& ep, const std::string& uri) {
    return request(ep, "resources/read", {{"uri", uri}});
  }
  // A session of alice's holding `path`.
  void upload(const std::string& data, const std::string& path = "/w/file") {
    if (sessions->list("alice").empty()) {
      auto created =
          request(*alice, "tools/call", {{"name", "run_code"}, {"arguments", {{"code", "1"}}}});
      ASSERT_FALSE(created["result"]["isError"].get<bool>()) << created.dump();
      s1 = created["result"]["structuredContent"]["session_id"];
    }
    auto r = request(*alice, "tools/call",
                     {{"name", "upload_file"},
                      {"arguments",
                       {{"session_id", s1},
                        {"path", path},
                        {"content", common::base64Encode(data)},
                        {"encoding", "base64"}}}});
    ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r.dump();
  }

  // A URI of alice's session (upload() made it): "sandbox://<its id>" + `rest`.
  [[nodiscard]] std::string uri(const std::string& rest) const { return "sandbox://" + s1 + rest; }

  // Follows next_uri from `uri` for at most `max_reads` reads; each link must point past the one
  // before. Returns the reads it took, or max_reads + 1 when the walk did not end.
  int follow(const std::string& uri, int max_reads) {
    std::int64_t offset = -1;
    int reads = 0;
    for (std::string next = uri; !next.empty(); ++reads) {
      if (reads == max_reads) return max_reads + 1;
      const json r = read(*alice, next);
      const json& range = r["result"]["contents"][0]["_meta"]["sandbox-mcp/range"];
      EXPECT_GT(range["offset"].get<std::int64_t>(), offset) << next;
      offset = range["offset"].get<std::int64_t>();
      next = range.value("next_uri", "");
    }
    return reads;
  }

  config::ServerConfig cfg;
  testing_support::FakeBackend backend;
  tools::ToolRegistry registry;
  std::unique_ptr<server::SessionRegistry> sessions;
  std::unique_ptr<mcp::McpServer> server;
  std::shared_ptr<jsonrpc::Endpoint> alice;
  std::shared_ptr<jsonrpc::Endpoint> mallory;
  std::string s1;  // alice's session, once upload() made it
  int next_id = 0;
};

TEST_F(SessionResourcesTest, AdvertisesTheCapabilityAndTheTemplate) {
  auto init = request(*alice, "initialize", {{"protocolVersion", "2025-11-25"}});
  EXPECT_TRUE(init["result"]["capabilities"].contains("resources")) << init.dump();
  auto templates = request(*alice, "resources/templates/list")["result"]["resourceTemplates"];
  ASSERT_EQ(templates.size(), 1U);
  EXPECT_EQ(templates[0]["uriTemplate"], "sandbox://{session_id}/{+path}{?offset,length}");
  EXPECT_NE(templates[0]["description"].get<std::string>().find("1024 bytes"), std::string::npos);
}

TEST_F(SessionResourcesTest, ReadsTextWholeOrInRanges) {
  upload("hello, world");
  auto r = read(*alice, uri("/w/file"));
  const auto& contents = r["result"]["contents"][0];
  EXPECT_EQ(contents["text"], "hello, world") << r.dump();
  EXPECT_EQ(contents["uri"], uri("/w/file"));
  EXPECT_EQ(contents["mimeType"], "text/plain");
  EXPECT_EQ(contents["_meta"]["sandbox-mcp/range"]["file_size"], 12);
  EXPECT_FALSE(contents["_meta"]["sandbox-mcp/range"].contains("next_uri"));

  r = read(*alice, uri("/w/file?offset=7&length=3"));
  EXPECT_EQ(r["result"]["contents"][0]["text"], "wor") << r.dump();
  EXPECT_EQ(r["result"]["contents"][0]["_meta"]["sandbox-mcp/range"]["next_uri"],
            uri("/w/file?offset=10&length=3"));
}

TEST_F(SessionResourcesTest, CapsOneReadAndPointsAtTheNextRange) {
  upload(std::string(3000, 'x'));
  auto r = read(*alice, uri("/w/file?length=100000"));
  const auto& contents = r["result"]["contents"][0];
  EXPECT_EQ(contents["text"].get<std::string>().size(), 1024U);
  EXPECT_EQ(contents["_meta"]["sandbox-mcp/range"]["next_uri"],
            uri("/w/file?offset=1024&length=1024"));
  r = read(*alice, uri("/w/file?offset=3000"));
  EXPECT_EQ(r["result"]["contents"][0]["text"], "");  // the end: empty, no next_uri
  EXPECT_FALSE(r["result"]["contents"][0]["_meta"]["sandbox-mcp/range"].contains("next_uri"));
}

TEST_F(SessionResourcesTest, ARangeNeverSplitsACharacterAndBinaryIsABlob) {
  upload(
      "ab\xE2\x82\xAC"
      "cd");  // "ab€cd"
  auto r = read(*alice, uri("/w/file?length=4"));
  EXPECT_EQ(r["result"]["contents"][0]["text"], "ab") << r.dump();  // € left for the next range
  EXPECT_EQ(r["result"]["contents"][0]["_meta"]["sandbox-mcp/range"]["next_uri"],
            uri("/w/file?offset=2&length=4"));
  upload(std::string("\x89PNG\r\n\x1a\n\xff\xfe", 10));
  r = read(*alice, uri("/w/file"));
  EXPECT_FALSE(r["result"]["contents"][0].contains("text"));
  EXPECT_EQ(common::base64Decode(r["result"]["contents"][0]["blob"].get<std::string>()),
            std::string("\x89PNG\r\n\x1a\n\xff\xfe", 10));
  EXPECT_EQ(r["result"]["contents"][0]["mimeType"], "application/octet-stream");
}

TEST_F(SessionResourcesTest, ALengthOfZeroIsRefusedAndEveryLinkAdvancesToTheEnd) {
  upload(
      "ab\xE2\x82\xAC"
      "cd");  // "ab€cd"
  for (const std::string& zero : {uri("/w/file?length=0"), uri("/w/file?offset=2&length=0")}) {
    const json r = read(*alice, zero);
    EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams) << zero << ": " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find("length must be at least 1"),
              std::string::npos)
        << r.dump();
  }
  EXPECT_EQ(follow(uri("/w/file?length=1"), 20), 7) << "1 byte a read, through the €";
  EXPECT_EQ(follow(uri("/w/file?length=2"), 20), 4);
  EXPECT_EQ(follow(uri("/w/file?offset=7"), 20), 1) << "at the end: no link";
}

TEST_F(SessionResourcesTest, ARangeThatReturnsNothingLinksNowhere) {
  // The sandbox says the file is 100 bytes longer than a read returns (it shrank meanwhile).
  upload("abc", "/w/file.racing");
  const json first = read(*alice, uri("/w/file.racing"));
  const json& range = first["result"]["contents"][0]["_meta"]["sandbox-mcp/range"];
  EXPECT_EQ(range["file_size"], 103);
  EXPECT_EQ(range["next_uri"], uri("/w/file.racing?offset=3&length=1024"));
  const json empty = read(*alice, range["next_uri"].get<std::string>());
  EXPECT_EQ(empty["result"]["contents"][0]["text"], "");
  EXPECT_FALSE(empty["result"]["contents"][0]["_meta"]["sandbox-mcp/range"].contains("next_uri"))
      << empty.dump();
  EXPECT_EQ(follow(uri("/w/file.racing?length=1"), 20), 4);
}

TEST_F(SessionResourcesTest, AnotherClientCannotReadOrListASession) {
  upload("secret");
  auto r = read(*mallory, uri("/w/file"));
  EXPECT_EQ(r["error"]["code"], mcp::kResourceNotFound) << r.dump();
  EXPECT_EQ(r["error"]["message"].get<std::string>().find("secret"), std::string::npos);
  EXPECT_TRUE(request(*mallory, "resources/list")["result"]["resources"].empty());
}

TEST_F(SessionResourcesTest, FiguresComeAsImageContentWithTheFullSizeListedAsAResource) {
  const json result = call(*alice, "run_code", {{"code", "figure"}});
  const json& structured = result["structuredContent"];
  ASSERT_EQ(structured["images"].size(), 1U) << result;
  const json& image = structured["images"][0];
  EXPECT_EQ(image["width"], 4000);
  EXPECT_EQ(image["sent_width"], 1568);
  EXPECT_EQ(image["sent_height"], 1045);
  const std::string sid = structured["session_id"];
  EXPECT_EQ(image["uri"], "sandbox://" + sid + "/tmp/.sandbox-mcp/figures/figure-1-1.png");
  EXPECT_EQ(structured["table"]["shape"], json::array({1, 1}));
  EXPECT_EQ(structured["table"]["dtypes"][0]["dtype"], "int64");

  const json& content = result["content"];
  ASSERT_EQ(content.size(), 2U);
  EXPECT_EQ(content[0]["type"], "text");
  EXPECT_NE(
      content[0]["text"].get<std::string>().find("[image 1: 4000x2667 PNG, sent at 1568x1045"),
      std::string::npos);
  EXPECT_EQ(content[1]["type"], "image");
  EXPECT_EQ(content[1]["mimeType"], "image/png");
  const auto png = common::base64Decode(content[1]["data"].get<std::string>());
  ASSERT_TRUE(png);
  EXPECT_EQ(common::pngSize(*png), std::make_pair(std::int64_t{1568}, std::int64_t{1045}));

  bool listed = false;
  const json listing = request(*alice, "resources/list");
  for (const auto& resource : listing["result"]["resources"]) {
    listed = listed || (resource["uri"] == image["uri"] && resource["mimeType"] == "image/png");
  }
  EXPECT_TRUE(listed);
}

TEST_F(SessionResourcesTest, ImagesThatFailThePngCheckAreNotSentAndTheWarningsSayWhy) {
  const json result = call(*alice, "run_code", {{"code", "forged-figures"}});
  const json& structured = result["structuredContent"];
  const std::string sid = structured["session_id"];
  ASSERT_EQ(structured["images"].size(), 1U) << result;
  EXPECT_EQ(structured["images"][0]["path"], "/tmp/.sandbox-mcp/figures/figure-1-2.png");
  ASSERT_EQ(result["content"].size(), 2U) << result;
  EXPECT_EQ(result["content"][1]["type"], "image");
  const auto png = common::base64Decode(result["content"][1]["data"].get<std::string>());
  ASSERT_TRUE(png);
  EXPECT_TRUE(common::checkPng(*png)) << "the real one is sent";

  const std::string figures = "/tmp/.sandbox-mcp/figures/figure-1-";
  const json expected = {
      "image 1 of 3 shown was not sent: it failed the PNG check (chunk 1 (IHDR) fails its CRC "
      "check); the file stays in the sandbox at " +
          figures + "1.png (resources/read sandbox://" + sid + figures + "1.png)",
      "image 3 of 3 shown was not sent: it failed the PNG check (the image data inflates to more "
      "than the 3630 bytes its IHDR implies (a decompression bomb)); the file stays in the "
      "sandbox at " +
          figures + "3.png (resources/read sandbox://" + sid + figures + "3.png)"};
  EXPECT_EQ(structured["warnings"], expected);
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("warning: image 1 of 3 shown was not sent"), std::string::npos) << text;
  EXPECT_NE(text.find("[image 1: 40x30 PNG, sent at 40x30"), std::string::npos) << text;
}

TEST_F(SessionResourcesTest, TheImagesOfOneCallShareABoundOnWhatTheyDecodeTo) {
  // Each decodes to 19,670,560 bytes: six fit in 2 x 67,112,960, the seventh and eighth do not.
  const json result = call(*alice, "run_code", {{"code", "big-figures"}});
  const json& structured = result["structuredContent"];
  EXPECT_EQ(structured["images"].size(), 6U) << structured.dump().substr(0, 2000);
  ASSERT_EQ(structured["warnings"].size(), 2U) << structured.dump().substr(0, 2000);
  for (const auto& [index, number] : {std::pair{0, "7"}, std::pair{1, "8"}}) {
    const std::string warning = structured["warnings"][index];
    EXPECT_EQ(warning.find(std::string("image ") + number + " of 8 shown was not sent"), 0U)
        << warning;
    EXPECT_NE(warning.find("would decode to more than the 16202560 bytes allowed); the images of "
                           "one call may decode to 134225920 bytes in all; the file stays"),
              std::string::npos)
        << warning;
  }
}

TEST_F(SessionResourcesTest, ShellAndJavascriptGiveTextOnly) {
  // The fake answers "figure" with a table whatever the language: the server keeps it out.
  const json javascript =
      call(*alice, "run_code", {{"code", "figure"}, {"language", "javascript"}});
  const json shell = call(*alice, "run_shell", {{"command", "figure"}});
  for (const json& result : {javascript, shell}) {
    EXPECT_FALSE(result["structuredContent"].contains("images")) << result;
    EXPECT_FALSE(result["structuredContent"].contains("table")) << result;
    EXPECT_EQ(result["content"].size(), 1U);
  }
}

TEST_F(SessionResourcesTest, BadRequestsGetErrorsThatSayWhatToDo) {
  upload("x");
  auto r = request(*alice, "resources/read", json::object());
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams);
  r = read(*alice, "http://example.com/x");
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidParams);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("sandbox://"), std::string::npos);
  r = read(*alice, uri("/w/missing"));
  EXPECT_EQ(r["error"]["code"], mcp::kResourceNotFound);
  r = read(*alice, uri("/w/file?offset=5"));
  EXPECT_EQ(r["error"]["code"], mcp::kResourceNotFound);  // past the end
  r = read(*alice, "sandbox://nope/w/file");
  EXPECT_EQ(r["error"]["code"], mcp::kResourceNotFound);
  // Before initialize, as every other method.
  auto fresh = server->open("carol");
  r = request(*fresh, "resources/templates/list");
  EXPECT_EQ(r["error"]["code"], jsonrpc::kInvalidRequest);
}

}  // namespace
