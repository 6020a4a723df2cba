// Who allows what on the egress proxy: the operator's egress section (checked at load), what a
// call's `egress` argument may pick or narrow (never widen), what the relay is told (its rules
// file and flags), and what the server learns back from the audit log (counts, bytes, the
// refusals a tool result lists).
#include "server/session_egress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "sandbox/backend.h"
#include "sandbox/process_sidecar.h"
#include "server/audit_tally.h"
#include "server/mcp_gateway.h"

namespace {

using nlohmann::json;

config::EgressConfig enabled(const json& allow = json::array({"pypi.org"})) {
  return config::fromJson({{"egress", {{"enabled", true}, {"allow", allow}}}}).egress;
}

std::string refusal(const json& requested, const config::EgressConfig& config) {
  try {
    (void)server::sessionEgress(requested, config);
  } catch (const sandbox::SandboxError& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> hosts(const policy::EgressPolicy& rules) {
  std::vector<std::string> out;
  for (const auto& rule : rules.rules) out.push_back(rule.host.toString());
  return out;
}

TEST(SessionEgress, IsOffUnlessTheOperatorEnablesItAndTheRefusalSaysSo) {
  const config::EgressConfig off;
  const std::string error = refusal(true, off);
  EXPECT_NE(error.find("egress.enabled"), std::string::npos) << error;
  EXPECT_EQ(server::sessionEgress(false, off), nullptr);
  EXPECT_EQ(server::sessionEgress(false, enabled()), nullptr);
}

TEST(SessionEgress, TrueGivesTheOperatorsListAndProfilesAddTheirs) {
  const auto config = enabled();
  EXPECT_EQ(hosts(*server::sessionEgress(true, config)), std::vector<std::string>{"pypi.org"});
  const auto with_npm = server::sessionEgress({{"profiles", {"npm-packages"}}}, config);
  EXPECT_EQ(hosts(*with_npm), (std::vector<std::string>{"pypi.org", "registry.npmjs.org"}));
  const std::string unknown = refusal({{"profiles", {"everything"}}}, config);
  EXPECT_NE(unknown.find("no profile 'everything'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("python-packages"), std::string::npos) << unknown;  // what there is
}

TEST(SessionEgress, ACallNarrowsButNeverWidens) {
  const auto config = enabled(json::array({"pypi.org", "*.example.com", "api.example.org:8443"}));
  const auto narrowed = server::sessionEgress({{"allow", {"a.example.com"}}}, config);
  EXPECT_EQ(hosts(*narrowed), std::vector<std::string>{"a.example.com"});
  for (const json& wider :
       {json::array({"evil.example"}), json::array({"example.com"}), json::array({"*.com"}),
        json::array({"pypi.org:8443"}), json::array({"api.example.org"}),
        json::array({"127.0.0.1"}), json::array({"169.254.169.254"})}) {
    const std::string error = refusal({{"allow", wider}}, config);
    EXPECT_FALSE(error.empty()) << wider.dump() << " was granted";
    EXPECT_NE(error.find("pypi.org"), std::string::npos) << error;  // it names what there is
  }
  // A profile the call picks can be narrowed into, too.
  EXPECT_TRUE(
      refusal({{"profiles", {"npm-packages"}}, {"allow", {"registry.npmjs.org"}}}, config).empty());
  EXPECT_FALSE(refusal({{"allow", json::array()}}, config).empty());
  EXPECT_NE(refusal({{"proxy", "x"}}, config).find("proxy"), std::string::npos);
  EXPECT_FALSE(refusal(json("yes"), config).empty());
}

TEST(SessionEgress, NothingToAllowIsAnErrorThatNamesTheProfiles) {
  const std::string error = refusal(true, enabled(json::array()));
  EXPECT_NE(error.find("nothing to allow"), std::string::npos) << error;
  EXPECT_NE(error.find("git-hosting"), std::string::npos) << error;
}

TEST(EgressConfig, TheLoaderRefusesMetadataBadEntriesAndBadNamesAndProfilesCanBeEdited) {
  const auto fails = [](const json& egress, const std::string& needle) {
    try {
      (void)config::fromJson({{"egress", egress}});
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << egress.dump() << " was accepted";
  };
  fails({{"allow", {"169.254.169.254:80"}}}, "egress.allow");
  fails({{"allow", {"metadata.google.internal"}}}, "metadata");
  fails({{"allow", {"*"}}}, "egress.allow");
  fails({{"profiles", {{"mine", {"https://x.example/path"}}}}}, "egress.profiles.mine");
  fails({{"profiles", {{"Bad Name", {"x.example"}}}}}, "profile name");
  fails({{"proxy_port", 80}}, "egress.proxy_port");
  fails({{"max_mib", 0}}, "egress.max_mib");
  fails({{"allow_everything", true}}, "allow_everything");
  const auto edited = config::fromJson(
      {{"egress",
        {{"profiles", {{"npm-packages", nullptr}, {"python-packages", {"pypi.internal"}}}}}}});
  EXPECT_EQ(edited.egress.profiles.count("npm-packages"), 0u);
  EXPECT_EQ(edited.egress.profiles.at("python-packages"), json::array({"pypi.internal"}));
  EXPECT_EQ(edited.egress.profiles.count("git-hosting"), 1u);  // the defaults stay
  // The dump reads back to the same config.
  const auto again = config::fromJson(config::toJson(edited));
  EXPECT_EQ(again.egress.profiles, edited.egress.profiles);
  EXPECT_FALSE(again.egress.enabled);
}

TEST(EgressAuditTally, CountsEgressLinesApartAndKeepsTheRefusalsForTheToolResult) {
  server::AuditTally tally;
  std::string lines;
  lines += R"({"method":"POST","url":"https://mcp.example/mcp","decision":"allow","status":200})"
           "\n";
  lines += R"({"method":"CONNECT","url":"pypi.org:443","decision":"allow","status":200,)"
           R"("bytes":1000,"kind":"egress","up":200})"
           "\n";
  for (int i = 0; i < 10; ++i) {
    lines += R"({"method":"CONNECT","url":"evil.example:443","decision":"deny","status":403,)"
             R"("reason":"not allowed )" +
             std::to_string(i) + R"(","bytes":0,"kind":"egress","up":0})" + "\n";
  }
  lines += R"({"method":"CONNECT","url":"gone.example:443","decision":"error","status":502,)"
           R"("reason":"cannot resolve","kind":"egress"})"
           "\n";
  tally.consume(lines);
  EXPECT_EQ(tally.allowed(), 1u);  // the MCP line
  EXPECT_EQ(tally.denied(), 0u);
  EXPECT_EQ(tally.egress().allowed, 1u);
  EXPECT_EQ(tally.egress().denied, 10u);
  EXPECT_EQ(tally.egress().errors, 1u);
  EXPECT_EQ(tally.egress().bytes_up, 200u);
  EXPECT_EQ(tally.egress().bytes_down, 1000u);
  const auto refusals = tally.takeEgressRefusals();
  ASSERT_EQ(refusals.size(), server::AuditTally::kMaxRefusalsKept + 1);
  EXPECT_EQ(refusals[0], "CONNECT evil.example:443: not allowed 0");
  EXPECT_EQ(refusals.back(), "and 3 more (get_session_stats)");
  EXPECT_TRUE(tally.takeEgressRefusals().empty());
}

class RecordingLauncher final : public sandbox::SidecarLauncher {
 public:
  struct Relay final : sandbox::Sidecar {
    bool running() override { return true; }
    [[nodiscard]] std::string describe() const override { return "test relay"; }
  };
  std::unique_ptr<sandbox::Sidecar> launch(const sandbox::SidecarSpec& spec) override {
    launched = spec;
    return std::make_unique<Relay>();
  }
  [[nodiscard]] std::string mode() const override { return "process"; }
  sandbox::SidecarSpec launched;
};

TEST(EgressGatewayFiles, TheRelayGetsTheRulesFileAndTheProxySocketBesideTheMcpOne) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("egress-gateway-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RecordingLauncher launcher;
  {
    const auto rules = server::sessionEgress({{"profiles", {"npm-packages"}}}, enabled());
    server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir.string()),
                               "s1", nullptr, {}, {}, {}, nullptr, rules);
    EXPECT_FALSE(gateway.servesMcp());
    EXPECT_TRUE(gateway.servesEgress());
    gateway.start();
    ASSERT_FALSE(launcher.launched.egress_rules_file.empty());
    std::ifstream in(launcher.launched.egress_rules_file);
    const auto written = policy::loadEgressRules(json::parse(in), "file");
    EXPECT_EQ(hosts(written), (std::vector<std::string>{"pypi.org", "registry.npmjs.org"}));
    const auto args = sandbox::sidecarArguments(launcher.launched, "/session");
    const auto at = std::find(args.begin(), args.end(), "--egress-listen");
    ASSERT_NE(at, args.end());
    EXPECT_EQ(*(at + 1), "/session/sock/egress.sock");
    EXPECT_NE(std::find(args.begin(), args.end(), "/session/egress.json"), args.end());
    EXPECT_EQ(gateway.stats()["egress"]["allow"], "pypi.org, registry.npmjs.org");
  }
  EXPECT_FALSE(std::filesystem::exists(dir));  // the directory goes with the gateway
}

}  // namespace

namespace {

config::EgressConfig withSecrets(const json& secrets) {
  return config::fromJson({{"egress",
                            {{"enabled", true},
                             {"allow", {"api.example.com", "pypi.org"}},
                             {"secrets", secrets}}}})
      .egress;
}

TEST(EgressSecrets, ValuesComeFromTheEnvironmentOrAFileAndOnlyForHostsTheSessionReaches) {
  ::setenv("EGRESS_TEST_TOKEN", "s3cret-env", 1);
  const auto file =
      std::filesystem::temp_directory_path() / ("egress-secret-" + std::to_string(::getpid()));
  std::ofstream(file) << "s3cret-file\n";
  const auto config = withSecrets(json::array(
      {{{"host", "api.example.com"},
        {"headers",
         {{"Authorization", {{"env", "EGRESS_TEST_TOKEN"}, {"prefix", "Bearer "}}},
          {"X-Api-Key", {{"file", file.string()}}}}}},
       {{"host", "other.example.com"}, {"headers", {{"X-Key", {{"env", "EGRESS_TEST_TOKEN"}}}}}}}));
  const auto everything = server::sessionEgress(true, config);
  const auto secrets = server::resolveSecrets(config, everything.get(), nullptr, nullptr);
  ASSERT_EQ(secrets.size(), 1u) << secrets.dump();  // other.example.com is not in the rules
  EXPECT_EQ(secrets[0]["host"], "api.example.com");
  EXPECT_EQ(secrets[0]["port"], 443);
  EXPECT_EQ(secrets[0]["headers"]["Authorization"], "Bearer s3cret-env");
  EXPECT_EQ(secrets[0]["headers"]["X-Api-Key"], "s3cret-file");  // the trailing newline dropped
  EXPECT_EQ(secrets[0]["relay"], false);  // reached by egress only: the MCP relay does not set it
  // A model's own mcp_allowlist naming the host (no operator list) does not mark it for the relay.
  const auto model_list = policy::loadPolicy(json::array({"https://api.example.com/"}));
  const auto with_model_list =
      server::resolveSecrets(config, everything.get(), model_list.get(), nullptr);
  ASSERT_EQ(with_model_list.size(), 1u);
  EXPECT_EQ(with_model_list[0]["relay"], false);
  // A session narrowed to pypi.org gets none.
  const auto narrowed = server::sessionEgress({{"allow", {"pypi.org"}}}, config);
  EXPECT_TRUE(server::resolveSecrets(config, narrowed.get(), nullptr, nullptr).empty());
  std::filesystem::remove(file);
}

TEST(EgressSecrets, AnMcpServerBothAllowlistsNameGetsItsHostsSecretsWithoutEgress) {
  ::setenv("EGRESS_TEST_TOKEN", "s3cret-env", 1);
  auto config = withSecrets(json::array(
      {{{"host", "mcp.example.com"},
        {"headers", {{"Authorization", {{"env", "EGRESS_TEST_TOKEN"}}}}}},
       {{"host", "mcp.example.com"},
        {"port", 8443},
        {"headers", {{"X-Other-Port", {{"env", "EGRESS_TEST_TOKEN"}}}}}},
       {{"host", "api.example.com"}, {"headers", {{"X-Key", {{"env", "EGRESS_TEST_TOKEN"}}}}}}}));
  config.enabled = false;  // the MCP relay needs no egress
  const auto operator_list =
      policy::loadPolicy(json::array({"https://mcp.example.com/", "https://api.example.com/"}));
  const auto session_list = policy::loadPolicy(json::array({"https://mcp.example.com/mcp"}));
  const auto secrets =
      server::resolveSecrets(config, nullptr, session_list.get(), operator_list.get());
  ASSERT_EQ(secrets.size(), 1u) << secrets.dump();  // not port 8443, not api.example.com
  EXPECT_EQ(secrets[0]["host"], "mcp.example.com");
  EXPECT_EQ(secrets[0]["port"], 443);
  EXPECT_EQ(secrets[0]["headers"]["Authorization"], "s3cret-env");
  EXPECT_EQ(secrets[0]["relay"], true);
  // A model's own list (no operator list) never brings a secret, whatever it names.
  EXPECT_TRUE(server::resolveSecrets(config, nullptr, session_list.get(), nullptr).empty());
  EXPECT_TRUE(server::resolveSecrets(config, nullptr, nullptr, operator_list.get()).empty());
}

TEST(EgressSecrets, AMissingSourceNamesTheVariableOrFileNeverAValue) {
  ::unsetenv("EGRESS_TEST_ABSENT");
  const auto config = withSecrets(
      json::array({{{"host", "api.example.com"},
                    {"headers", {{"Authorization", {{"env", "EGRESS_TEST_ABSENT"}}}}}}}));
  try {
    (void)server::resolveSecrets(config, server::sessionEgress(true, config).get(), nullptr,
                                 nullptr);
    FAIL() << "a missing variable was accepted";
  } catch (const sandbox::SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("EGRESS_TEST_ABSENT"), std::string::npos) << e.what();
  }
  // A byte past printable ASCII is refused naming the entry, never quoting the byte (the JSON
  // writer's own error would).
  ::setenv("EGRESS_TEST_BINARY",
           "tok\xc3\x28"
           "en",
           1);
  const auto binary = withSecrets(
      json::array({{{"host", "api.example.com"},
                    {"headers", {{"Authorization", {{"env", "EGRESS_TEST_BINARY"}}}}}}}));
  try {
    (void)server::resolveSecrets(binary, server::sessionEgress(true, binary).get(), nullptr,
                                 nullptr);
    FAIL() << "a value that is not printable ASCII was accepted";
  } catch (const sandbox::SandboxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("egress.secrets[0].headers.Authorization: the value holds a byte that is "
                        "not printable ASCII"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("s3cr"), std::string::npos) << what;
    EXPECT_EQ(what.find("0xC3"), std::string::npos) << what;
  }
  ::unsetenv("EGRESS_TEST_BINARY");
  const auto fails = [](const json& secrets, const std::string& needle) {
    try {
      (void)withSecrets(secrets);
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << secrets.dump() << " was accepted";
  };
  fails(json::array({{{"host", "*.example.com"}, {"headers", {{"A", {{"env", "X"}}}}}}}), "host");
  fails(json::array({{{"host", "API.example.com"}, {"headers", {{"A", {{"env", "X"}}}}}}}), "host");
  fails(json::array({{{"host", "a.example"}, {"headers", {{"Bad Name", {{"env", "X"}}}}}}}),
        "header name");
  fails(json::array({{{"host", "a.example"}, {"headers", {{"A", {{"value", "literal"}}}}}}}),
        "value");
  fails(json::array({{{"host", "a.example"}, {"headers", {{"A", {{"file", "relative"}}}}}}}),
        "absolute");
  fails(json::array({{{"host", "a.example"}, {"headers", json::object()}}}), "at least one");
}

TEST(EgressSecrets, TheGatewayWritesThemForTheRelayOnlyAndNamesNoValue) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("egress-secrets-gw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RecordingLauncher launcher;
  const json secrets = json::array(
      {{{"host", "api.example.com"}, {"port", 443}, {"headers", {{"Authorization", "Bearer v"}}}}});
  {
    server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir.string()),
                               "s1", nullptr, {}, {}, {}, nullptr,
                               server::sessionEgress(true, withSecrets(json::array())), secrets);
    EXPECT_TRUE(gateway.setsSecretHeaders());
    EXPECT_TRUE(gateway.interceptsTls());  // its egress rules reach api.example.com
    gateway.start();
    const auto& file = launcher.launched.secrets_file;
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    std::ifstream in(file);
    EXPECT_EQ(json::parse(in), secrets);
    const auto args = sandbox::sidecarArguments(launcher.launched, "/session");
    const auto flag = std::find(args.begin(), args.end(), "--secrets");
    ASSERT_NE(flag, args.end());
    EXPECT_EQ(*std::next(flag), "/session/secrets.json");
    EXPECT_EQ(gateway.stats()["secret_hosts"], json::array({"api.example.com:443"}));
    const auto stats = gateway.stats().dump();
    EXPECT_NE(stats.find("api.example.com:443"), std::string::npos) << stats;
    EXPECT_EQ(stats.find("Bearer v"), std::string::npos) << stats;
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(EgressSecrets, TheSandboxTrustsTheCaOnlyWhenTheProxyReachesASecretHost) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("egress-secrets-ca-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RecordingLauncher launcher;
  // Egress reaches pypi.org only; the secret is for an MCP server.
  server::McpGateway gateway(
      launcher, std::make_unique<sandbox::ScopedDirectory>(dir.string()), "s1",
      policy::loadPolicy(json::array({"https://mcp.example.com/"})), {}, {}, {}, nullptr,
      server::sessionEgress(true, enabled()),
      json::array({{{"host", "mcp.example.com"}, {"port", 443}, {"headers", {{"A", "v"}}}}}));
  EXPECT_TRUE(gateway.setsSecretHeaders());
  EXPECT_FALSE(gateway.interceptsTls());
}

TEST(EgressSecrets, AnMcpOnlyGatewayPassesTheSecretsButInterceptsNothing) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("mcp-secrets-gw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RecordingLauncher launcher;
  const json secrets = json::array(
      {{{"host", "mcp.example.com"}, {"port", 443}, {"headers", {{"Authorization", "Bearer v"}}}}});
  const auto internal_ca = dir.string() + "-internal-ca.pem";
  std::ofstream(internal_ca) << "-----BEGIN CERTIFICATE-----\n";
  {
    server::McpGateway gateway(launcher, std::make_unique<sandbox::ScopedDirectory>(dir.string()),
                               "s1", policy::loadPolicy(json::array({"https://mcp.example.com/"})),
                               {}, {}, {}, nullptr, nullptr, secrets, "/nonexistent/ca.pem",
                               internal_ca);
    EXPECT_TRUE(gateway.setsSecretHeaders());
    EXPECT_FALSE(gateway.interceptsTls());
    gateway.start();
    EXPECT_FALSE(launcher.launched.secrets_file.empty());
    EXPECT_TRUE(launcher.launched.egress_upstream_ca_file.empty());  // only the proxy uses it
    // mcp.upstream_ca_file: copied where the relay reads it, named on its command line.
    ASSERT_EQ(launcher.launched.upstream_ca_file, dir.string() + "/mcp-upstream-ca.pem");
    EXPECT_TRUE(std::filesystem::exists(launcher.launched.upstream_ca_file));
    const auto args = sandbox::sidecarArguments(launcher.launched, "/session");
    EXPECT_NE(std::find(args.begin(), args.end(), "--secrets"), args.end());
    const auto ca_flag = std::find(args.begin(), args.end(), "--upstream-ca");
    ASSERT_NE(ca_flag, args.end());
    EXPECT_EQ(*std::next(ca_flag), "/session/mcp-upstream-ca.pem");
    EXPECT_EQ(std::find(args.begin(), args.end(), "--egress-listen"), args.end());
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  std::filesystem::remove(internal_ca);
}

}  // namespace
