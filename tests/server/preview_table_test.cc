// The table of preview grants (expose_port): labels are 128-bit capabilities bound to one session
// and one port; a grant ends at its expiry (an injected clock here), with unexpose_port, or with
// its session (held weakly); a session's exposed ports are bounded.
#include "server/preview_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fake_backend.h"
#include "server/session.h"

namespace {

using namespace std::chrono_literals;
using server::PreviewTable;

// Sessions over in-memory sandboxes; `live` counts the sandboxes not yet destroyed.
struct Sessions {
  std::shared_ptr<server::Session> make(const std::string& id, const std::string& owner = "alice") {
    return std::make_shared<server::Session>(
        id, owner, server::SessionOptions{},
        std::make_unique<testing_support::FakeSandbox>("c-" + id, "python:3.12", live));
  }
  std::atomic<int> live{0};
};

// A table on a clock the test moves.
struct ClockedTable {
  PreviewTable::Clock::time_point now = PreviewTable::Clock::time_point{} + 1000h;
  PreviewTable table{[this] { return now; }};
};

std::vector<std::uint16_t> portsOf(const std::vector<server::PreviewGrant>& grants) {
  std::vector<std::uint16_t> ports;
  for (const auto& grant : grants) ports.push_back(grant.port);
  return ports;
}

TEST(PreviewTable, ExposeGivesA32HexLabelBoundToTheSessionAndPort) {
  Sessions sessions;
  ClockedTable t;
  auto session = sessions.make("s-1", "principal:bob");
  const auto grant = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(grant);
  EXPECT_EQ(grant->label.size(), 32U);
  EXPECT_TRUE(server::looksLikePreviewLabel(grant->label)) << grant->label;
  EXPECT_EQ(grant->owner, "principal:bob");
  EXPECT_EQ(grant->session_id, "s-1");
  EXPECT_EQ(grant->session.lock(), session);
  EXPECT_EQ(grant->port, 8080);
  EXPECT_EQ(grant->expires_at, t.now + 60s);

  const auto found = t.table.find(grant->label);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->port, 8080);
  EXPECT_EQ(found->session_id, "s-1");
  // Another port gets another label.
  const auto other = t.table.expose(session, 3000, 60s, 8);
  ASSERT_TRUE(other);
  EXPECT_NE(other->label, grant->label);
  EXPECT_EQ(t.table.size(), 2U);
}

TEST(PreviewTable, ExposingThePortAgainKeepsItsLabelAndMovesItsExpiry) {
  Sessions sessions;
  ClockedTable t;
  auto session = sessions.make("s-1");
  const auto first = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(first);
  t.now += 30s;
  const auto again = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->label, first->label);
  EXPECT_EQ(again->expires_at, t.now + 60s);
  EXPECT_EQ(t.table.size(), 1U);
  t.now += 45s;  // past the first expiry, before the second
  ASSERT_TRUE(t.table.find(first->label));
  EXPECT_EQ(t.table.find(first->label)->expires_at, again->expires_at);
}

TEST(PreviewTable, ASessionExposesAtMostMaxPorts) {
  Sessions sessions;
  ClockedTable t;
  auto alice = sessions.make("s-a", "alice");
  auto bob = sessions.make("s-b", "bob");
  struct Row {
    const char* name;
    std::shared_ptr<server::Session>* session;
    std::uint16_t port;
    bool granted;
  };
  const Row rows[] = {
      {"first port", &alice, 3000, true},
      {"second port, at the bound", &alice, 3001, true},
      {"a third port, past the bound", &alice, 3002, false},
      {"the same port again at the bound", &alice, 3000, true},
      {"another session has its own bound", &bob, 3002, true},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(t.table.expose(*row.session, row.port, 60s, 2).has_value(), row.granted) << row.name;
  }
  EXPECT_TRUE(t.table.unexpose(*alice, 3001));
  EXPECT_TRUE(t.table.expose(alice, 3002, 60s, 2)) << "unexposing one frees a place";
  EXPECT_FALSE(t.table.expose(bob, 1, 60s, 0)) << "max_ports 0 allows nothing new";
  EXPECT_TRUE(t.table.expose(bob, 3002, 60s, 0)) << "but the port already exposed is renewed";
}

TEST(PreviewTable, UnexposeEndsOnlyThatSessionsGrantForThatPort) {
  Sessions sessions;
  ClockedTable t;
  auto alice = sessions.make("s-a", "alice");
  auto bob = sessions.make("s-b", "bob");
  const auto hers = t.table.expose(alice, 8080, 60s, 8);
  const auto his = t.table.expose(bob, 8080, 60s, 8);
  const auto other_port = t.table.expose(alice, 9090, 60s, 8);
  ASSERT_TRUE(hers && his && other_port);

  EXPECT_FALSE(t.table.unexpose(*alice, 1234)) << "a port never exposed";
  EXPECT_TRUE(t.table.unexpose(*alice, 8080));
  EXPECT_FALSE(t.table.unexpose(*alice, 8080)) << "already ended";
  EXPECT_FALSE(t.table.find(hers->label));
  EXPECT_TRUE(t.table.find(his->label));
  EXPECT_TRUE(t.table.find(other_port->label));
  EXPECT_EQ(t.table.size(), 2U);
}

TEST(PreviewTable, AGrantEndsAtItsExpiry) {
  Sessions sessions;
  ClockedTable t;
  auto session = sessions.make("s-1");
  const auto grant = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(grant);
  t.now += 59s;
  EXPECT_TRUE(t.table.find(grant->label));
  EXPECT_EQ(t.table.of(*session).size(), 1U);
  t.now += 1s;  // expires_at itself is past
  EXPECT_FALSE(t.table.find(grant->label));
  EXPECT_TRUE(t.table.of(*session).empty());
  EXPECT_EQ(t.table.size(), 0U);
  // Exposing the port after its grant ended mints a new label: the old link stays dead.
  const auto renewed = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(renewed);
  EXPECT_NE(renewed->label, grant->label);
  EXPECT_FALSE(t.table.find(grant->label));
}

TEST(PreviewTable, AGrantEndsWithItsSession) {
  Sessions sessions;
  ClockedTable t;
  auto ending = sessions.make("s-1");
  auto staying = sessions.make("s-2");
  const auto gone = t.table.expose(ending, 8080, 60s, 8);
  const auto kept = t.table.expose(staying, 8080, 60s, 8);
  ASSERT_TRUE(gone && kept);
  ending.reset();
  EXPECT_EQ(sessions.live, 1) << "the table must not keep a session alive";
  EXPECT_FALSE(t.table.find(gone->label));
  EXPECT_TRUE(t.table.find(kept->label));
  EXPECT_EQ(t.table.size(), 1U);
}

TEST(PreviewTable, OfListsOnlyThatSessionsLiveGrantsByPort) {
  Sessions sessions;
  ClockedTable t;
  auto alice = sessions.make("s-a", "alice");
  auto bob = sessions.make("s-b", "bob");
  for (const std::uint16_t port : {8080, 3000, 5173})
    ASSERT_TRUE(t.table.expose(alice, port, 60s, 8));
  ASSERT_TRUE(t.table.expose(alice, 4000, 10s, 8));  // ends first
  ASSERT_TRUE(t.table.expose(bob, 4000, 60s, 8));

  EXPECT_EQ(portsOf(t.table.of(*alice)), (std::vector<std::uint16_t>{3000, 4000, 5173, 8080}));
  EXPECT_EQ(portsOf(t.table.of(*bob)), (std::vector<std::uint16_t>{4000}));
  t.now += 10s;
  EXPECT_EQ(portsOf(t.table.of(*alice)), (std::vector<std::uint16_t>{3000, 5173, 8080}));
  auto stranger = sessions.make("s-c", "carol");
  EXPECT_TRUE(t.table.of(*stranger).empty());
}

TEST(PreviewTable, FindRefusesWhatIsNotALabelShape) {
  Sessions sessions;
  ClockedTable t;
  auto session = sessions.make("s-1");
  const auto grant = t.table.expose(session, 8080, 60s, 8);
  ASSERT_TRUE(grant);
  std::string upper = grant->label;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_NE(upper, grant->label) << "a label of digits only: rerun";
  struct Row {
    const char* name;
    std::string label;
  };
  const Row rows[] = {
      {"empty", ""},
      {"upper case (Host parsing lower-cases first)", upper},
      {"one digit short", grant->label.substr(1)},
      {"one digit long", grant->label + "0"},
      {"a prefix label", "x." + grant->label},
      {"with the domain", grant->label + ".localhost"},
      {"a wildcard", "*"},
  };
  for (const auto& row : rows) EXPECT_FALSE(t.table.find(row.label)) << row.name;
  EXPECT_TRUE(t.table.find(grant->label));
}

TEST(PreviewTable, LooksLikePreviewLabel) {
  struct Row {
    std::string label;
    bool shaped;
  };
  const Row rows[] = {
      {"0123456789abcdef0123456789abcdef", true},
      {std::string(32, '0'), true},
      {std::string(32, 'f'), true},
      {"0123456789ABCDEF0123456789abcdef", false},  // upper case
      {"0123456789abcdef0123456789abcdeg", false},  // not hex
      {std::string(31, 'a'), false},
      {std::string(33, 'a'), false},
      {"", false},
      {"0123456789abcdef-123456789abcdef", false},
      {std::string("0123456789abcdef\0"
                   "123456789abcdef",
                   32),
       false},
      {"www", false},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(server::looksLikePreviewLabel(row.label), row.shaped) << row.label;
  }
}

TEST(PreviewTable, TheUrlPatternTurnsPreviewsOn) {
  PreviewTable table;
  EXPECT_FALSE(table.enabled());
  EXPECT_EQ(table.urlOf("abc"), "");
  table.setUrlPattern("http://{label}.localhost:8766/");
  EXPECT_TRUE(table.enabled());
  EXPECT_EQ(table.urlOf("0123456789abcdef0123456789abcdef"),
            "http://0123456789abcdef0123456789abcdef.localhost:8766/");
  table.setUrlPattern("https://{label}.preview.example.com/app");
  EXPECT_EQ(table.urlOf("ab"), "https://ab.preview.example.com/app");
  table.setUrlPattern("");
  EXPECT_FALSE(table.enabled());
  EXPECT_EQ(table.urlOf("ab"), "");
}

}  // namespace
