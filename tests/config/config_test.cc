#include "config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string errorOf(const json& document) {
  try {
    (void)config::fromJson(document);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, EmptyDocumentGivesSecureDefaults) {
  const auto c = config::fromJson(json::object());
  EXPECT_EQ(c.sandbox.runtime, "runsc");
  EXPECT_EQ(c.sandbox.agent_channel, "socket");
  EXPECT_EQ(c.sandbox.memory_mib, 512);
  EXPECT_DOUBLE_EQ(c.sandbox.cpus, 1.0);
  EXPECT_TRUE(c.sandbox.read_only_root);
  EXPECT_EQ(c.execution.default_timeout_s, 30);
  EXPECT_EQ(c.execution.max_output_bytes, 1024 * 1024);
  EXPECT_EQ(c.sessions.idle_timeout_s, 900);
  EXPECT_EQ(c.sessions.max_sessions, 64);
  EXPECT_TRUE(c.volumes.allowed_host_dirs.empty());
  // Hostile-input defaults (issue 9): no runc fallback, no Dockerfile builds, only sandbox.image.
  EXPECT_FALSE(c.sandbox.allow_runc_fallback);
  EXPECT_FALSE(c.sandbox.allow_dockerfile);
  EXPECT_TRUE(c.sandbox.allowed_images.empty());
  EXPECT_TRUE(c.sandbox.allowed_image_label.empty());
  EXPECT_EQ(c.sandbox.build_runtime, "runsc-build");
  EXPECT_EQ(c.sandbox.build_timeout_s, 300);
}

TEST(Config, SandboxBuildAndImageFieldsAreValidated) {
  const auto c = config::fromJson({{"sandbox",
                                    {{"allowed_images", {"team/py:*", "tools:1.2"}},
                                     {"allowed_image_label", "sandbox-mcp.allowed=1"},
                                     {"allow_dockerfile", true},
                                     {"built_images_max", 4}}}});
  EXPECT_EQ(c.sandbox.allowed_images, (std::vector<std::string>{"team/py:*", "tools:1.2"}));
  EXPECT_TRUE(c.sandbox.allow_dockerfile);
  EXPECT_EQ(c.sandbox.built_images_max, 4);
  EXPECT_EQ(errorOf({{"sandbox", {{"allowed_images", {"*"}}}}}),
            "config: sandbox.allowed_images[0] must be an image reference (\"repo:tag\") or "
            "\"repo:*\"");
  EXPECT_EQ(errorOf({{"sandbox", {{"allowed_images", {"ok:1", "a*b:1"}}}}}),
            "config: sandbox.allowed_images[1] must be an image reference (\"repo:tag\") or "
            "\"repo:*\"");
  EXPECT_EQ(errorOf({{"sandbox", {{"allowed_image_label", "nolabel"}}}}),
            "config: sandbox.allowed_image_label must be \"key=value\"");
  EXPECT_EQ(errorOf({{"sandbox", {{"build_timeout_s", 0}}}}),
            "config: sandbox.build_timeout_s must be >= 1");
  // The old switch is named in the error, with its replacement.
  EXPECT_NE(errorOf({{"sandbox", {{"strict_gvisor", true}}}}).find("allow_runc_fallback"),
            std::string::npos);
}

TEST(Config, PoolPreloadNamesPythonModulesOnly) {
  const auto defaults = config::fromJson(json::object());
  EXPECT_EQ(defaults.pool.preload_python,
            (std::vector<std::string>{"numpy", "pandas", "matplotlib.pyplot"}));
  EXPECT_TRUE(config::fromJson(json{{"pool", {{"preload_python", json::array()}}}})
                  .pool.preload_python.empty());
  EXPECT_EQ(config::fromJson(json{{"pool", {{"preload_python", {"scipy.stats", "_x1"}}}}})
                .pool.preload_python.size(),
            2U);
  // Each name ends up inside Python source: anything but a dotted identifier is refused.
  for (const char* bad :
       {"os; import x", "a..b", ".a", "a.", "1abc", "a-b", "", "'x'", "numpy\n__import__('os')"}) {
    const std::string error = errorOf(json{{"pool", {{"preload_python", {"numpy", bad}}}}});
    EXPECT_NE(error.find("pool.preload_python[1]"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_NE(errorOf(json{{"pool", {{"preload_python", "numpy"}}}}).find("pool.preload_python"),
            std::string::npos);
  EXPECT_NE(errorOf(json{{"pool", {{"preload_python", std::vector<std::string>(33, "m")}}}})
                .find("at most 32"),
            std::string::npos);
}

TEST(Config, ReadsNestedValues) {
  const auto c = config::fromJson(
      {{"sandbox", {{"memory_mib", 1024}, {"runtime", "runc"}, {"allow_runc_fallback", true}}},
       {"volumes", {{"allowed_host_dirs", {{{"path", "/data/"}, {"allow_rw", true}}}}}}});
  EXPECT_EQ(c.sandbox.memory_mib, 1024);
  EXPECT_EQ(c.sandbox.runtime, "runc");
  EXPECT_TRUE(c.sandbox.allow_runc_fallback);
  ASSERT_EQ(c.volumes.allowed_host_dirs.size(), 1U);
  EXPECT_EQ(c.volumes.allowed_host_dirs[0].path, "/data");
  EXPECT_TRUE(c.volumes.allowed_host_dirs[0].allow_rw);
}

TEST(Config, ThePlatformNamesTheEngineRuntime) {
  EXPECT_EQ(config::engineRuntime(config::fromJson(json::object()).sandbox), "runsc");
  const auto ptrace = config::fromJson({{"sandbox", {{"platform", "ptrace"}}}});
  EXPECT_EQ(ptrace.sandbox.platform, "ptrace");
  EXPECT_EQ(config::engineRuntime(ptrace.sandbox), "runsc-ptrace");
  EXPECT_EQ(
      config::engineRuntime(config::fromJson({{"sandbox", {{"platform", "systrap"}}}}).sandbox),
      "runsc-systrap");
  EXPECT_EQ(errorOf({{"sandbox", {{"platform", "native"}}}})
                .rfind("config: sandbox.platform must be \"systrap\", \"ptrace\" or \"kvm\"", 0),
            0U);
  EXPECT_EQ(
      errorOf({{"sandbox",
                {{"runtime", "runc"}, {"platform", "ptrace"}, {"allow_runc_fallback", true}}}}),
      "config: sandbox.platform is gVisor's platform: it needs sandbox.runtime runsc");
}

TEST(Config, ErrorsNameTheFieldPath) {
  EXPECT_EQ(errorOf({{"sandbox", {{"memory_mib", 1}}}}),
            "config: sandbox.memory_mib must be >= 16");
  EXPECT_EQ(errorOf({{"sandbox", {{"memry_mib", 1}}}}),
            "config: sandbox.memry_mib is not a known setting");
  EXPECT_EQ(errorOf({{"sandbox", {{"runtime", "kata"}}}}),
            "config: sandbox.runtime must be \"runsc\" or \"runc\"");
  EXPECT_EQ(errorOf({{"sandbox", {{"agent_channel", "tcp"}}}}),
            "config: sandbox.agent_channel must be \"socket\" or \"attach\"");
  EXPECT_EQ(errorOf({{"execution", {{"default_timeout_s", "ten"}}}}),
            "config: execution.default_timeout_s has the wrong type (got \"ten\")");
  EXPECT_EQ(errorOf({{"volumes", {{"allowed_host_dirs", {{{"path", "rel"}}}}}}}),
            "config: volumes.allowed_host_dirs[0].path must be an absolute host path");
  EXPECT_EQ(errorOf({{"log_level", "loud"}}),
            "config: log_level must be one of trace, debug, info, warn, error, off");
  EXPECT_EQ(errorOf(json::array()), "config: the document must be an object");
}

TEST(Config, InstanceIdIsALabelAndPathSafeName) {
  EXPECT_EQ(config::fromJson(json::object()).instance_id, "");  // random at start
  EXPECT_EQ(config::fromJson({{"instance_id", "sandbox-mcp-0.eu_1"}}).instance_id,
            "sandbox-mcp-0.eu_1");
  const std::string rule =
      "must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit";
  const std::vector<std::string> bad_ids = {
      "../x", "a/b", "-lead", ".hidden", "a b", "x=1", std::string(64, 'a')};
  for (const auto& bad : bad_ids) {
    EXPECT_EQ(errorOf({{"instance_id", bad}}),
              "config: instance_id " + rule + " (got '" + bad + "')")
        << bad;
  }
}

TEST(Config, ShutdownGraceIsBounded) {
  EXPECT_EQ(config::fromJson(json::object()).shutdown.grace_s, 25);
  EXPECT_EQ(config::fromJson({{"shutdown", {{"grace_s", 0}}}}).shutdown.grace_s, 0);
  EXPECT_EQ(errorOf({{"shutdown", {{"grace_s", -1}}}}), "config: shutdown.grace_s must be >= 0");
  EXPECT_EQ(errorOf({{"shutdown", {{"grace_s", 3601}}}}),
            "config: shutdown.grace_s must be <= 3600");
  EXPECT_EQ(errorOf({{"shutdown", {{"grace", 1}}}}),
            "config: shutdown.grace is not a known setting");
}

TEST(Config, DockerHostIsAUnixSocketOrTcpWithTls) {
  const auto defaults = config::fromJson(json::object());
  EXPECT_EQ(defaults.docker.host, "unix:///var/run/docker.sock");
  EXPECT_TRUE(defaults.docker.tls.empty());
  // The older socket_path still names the unix socket; saying the same thing twice is fine.
  EXPECT_EQ(config::fromJson({{"docker", {{"socket_path", "/run/d.sock"}}}}).docker.host,
            "unix:///run/d.sock");
  EXPECT_EQ(config::fromJson(
                {{"docker", {{"socket_path", "/run/d.sock"}, {"host", "unix:///run/d.sock"}}}})
                .docker.host,
            "unix:///run/d.sock");
  const json tls = {{"ca_file", "/etc/sandbox-mcp/ca.pem"},
                    {"cert_file", "/etc/sandbox-mcp/cert.pem"},
                    {"key_file", "/etc/sandbox-mcp/key.pem"}};
  const auto remote = config::fromJson({{"docker", {{"host", "tcp://[::1]:2376"}, {"tls", tls}}}});
  EXPECT_EQ(remote.docker.host, "tcp://[::1]:2376");
  EXPECT_EQ(remote.docker.tls.cert_file, "/etc/sandbox-mcp/cert.pem");
  EXPECT_EQ(config::toJson(config::fromJson(config::toJson(remote))), config::toJson(remote));

  EXPECT_EQ(errorOf({{"docker", {{"host", "tcp://10.0.0.5:2376"}}}}),
            "config: docker.tls.ca_file must be set for docker.host tcp://10.0.0.5:2376: an "
            "engine reached over TCP needs TLS with a client certificate (set docker.tls.ca_file, "
            "cert_file and key_file; an Engine API without them is root on its host for anyone "
            "who reaches the port)");
  json no_key = tls;
  no_key.erase("key_file");
  EXPECT_EQ(errorOf({{"docker", {{"host", "tcp://h:1"}, {"tls", no_key}}}})
                .rfind("config: docker.tls.key_file must be set for docker.host tcp://h:1", 0),
            0U);
  json relative = tls;
  relative["ca_file"] = "ca.pem";
  EXPECT_EQ(errorOf({{"docker", {{"host", "tcp://h:1"}, {"tls", relative}}}}),
            "config: docker.tls.ca_file must be an absolute path");
  EXPECT_EQ(errorOf({{"docker", {{"tls", tls}}}}),
            "config: docker.tls applies only to tcp:// engines, and docker.host is "
            "unix:///var/run/docker.sock; remove docker.tls");
  EXPECT_EQ(errorOf({{"docker", {{"tls", {{"ca", "/x"}}}}}}),
            "config: docker.tls.ca is not a known setting");
  EXPECT_EQ(errorOf({{"docker", {{"host", "/var/run/docker.sock"}}}}),
            "config: docker.host '/var/run/docker.sock' must start with unix:// or tcp:// (ssh:// "
            "and other schemes are not supported)");
  EXPECT_EQ(errorOf({{"docker", {{"host", "tcp://h"}, {"tls", tls}}}}),
            "config: docker.host 'tcp://h' needs a port (tcp://HOST:PORT; dockerd's TLS port is "
            "usually 2376)");
  EXPECT_EQ(errorOf({{"docker", {{"socket_path", "/a.sock"}, {"host", "unix:///b.sock"}}}}),
            "config: docker.socket_path (\"/a.sock\") disagrees with docker.host "
            "(\"unix:///b.sock\"); set only docker.host (socket_path is its older spelling)");
  EXPECT_EQ(
      errorOf({{"docker", {{"socket_path", "/a.sock"}, {"host", "tcp://h:1"}, {"tls", tls}}}}),
      "config: docker.socket_path (\"/a.sock\") disagrees with docker.host "
      "(\"tcp://h:1\"); set only docker.host (socket_path is its older spelling)");
  EXPECT_EQ(errorOf({{"docker", {{"socket_path", "run/d.sock"}}}}),
            "config: docker.socket_path must be an absolute path");
}

TEST(Config, McpUpstreamCaFileIsAnAbsolutePath) {
  EXPECT_EQ(errorOf({{"mcp", {{"upstream_ca_file", "ca.pem"}}}}),
            "config: mcp.upstream_ca_file must be an absolute path");
  EXPECT_EQ(config::fromJson({{"mcp", {{"upstream_ca_file", "/etc/internal-ca.pem"}}}})
                .mcp.upstream_ca_file,
            "/etc/internal-ca.pem");
}

TEST(Config, RoundTripsThroughJson) {
  auto c = config::fromJson({{"sessions", {{"max_sessions", 3}}},
                             {"instance_id", "replica-1"},
                             {"shutdown", {{"grace_s", 7}}}});
  auto again = config::fromJson(config::toJson(c));
  EXPECT_EQ(again.sessions.max_sessions, 3);
  EXPECT_EQ(again.instance_id, "replica-1");
  EXPECT_EQ(again.shutdown.grace_s, 7);
  EXPECT_EQ(config::toJson(again), config::toJson(c));
}

TEST(Config, HttpConnectionLimitsHaveDefaultsAndBounds) {
  const auto defaults = config::fromJson(json::object());
  EXPECT_EQ(defaults.http.max_connections, 0);  // derived from the open-file limit at start
  EXPECT_EQ(defaults.http.max_connections_per_address, 0);
  EXPECT_EQ(defaults.http.header_timeout_ms, 10000);
  EXPECT_EQ(defaults.http.idle_timeout_ms, 30000);
  const auto set = config::fromJson({{"http",
                                      {{"max_connections", 10},
                                       {"max_connections_per_address", 2},
                                       {"header_timeout_ms", 500},
                                       {"idle_timeout_ms", 700}}}});
  EXPECT_EQ(set.http.max_connections_per_address, 2);
  EXPECT_EQ(config::fromJson(config::toJson(set)).http.idle_timeout_ms, 700);
  EXPECT_THROW((void)config::fromJson({{"http", {{"max_connections", -1}}}}), config::ConfigError);
  EXPECT_THROW((void)config::fromJson({{"http", {{"header_timeout_ms", 10}}}}),
               config::ConfigError);
}

// docs/configuration.md's "Defaults" section shows every default: it must parse, and say what the
// code does.
TEST(Config, DocumentedDefaultsBlockIsTheDefaults) {
  const std::string path = std::string(SANDBOX_SOURCE_DIR) + "/docs/configuration.md";
  std::ifstream doc(path);
  ASSERT_TRUE(doc) << path << " not found";
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  const auto section = text.find("\n## Defaults\n");
  ASSERT_NE(section, std::string::npos) << "no \"## Defaults\" heading in " << path;
  const auto start = text.find("```json\n", section);
  ASSERT_NE(start, std::string::npos) << "no ```json block after \"## Defaults\" in " << path;
  const auto end = text.find("```", start + 8);
  const json documented = json::parse(text.substr(start + 8, end - start - 8));
  const auto parsed = config::fromJson(documented);  // unknown or misspelled fields throw
  EXPECT_EQ(config::toJson(parsed), config::toJson(config::fromJson(json::object())));
  EXPECT_EQ(parsed.execution.max_concurrent_per_client, 16);
  EXPECT_EQ(parsed.sessions.max_sessions_per_client, 16);
  EXPECT_EQ(parsed.tasks.max_per_client, 32);
}

TEST(Config, ImageLimitsHaveDefaultsAndBounds) {
  const auto defaults = config::fromJson(json::object());
  EXPECT_EQ(defaults.images.max_per_call, 8);
  EXPECT_EQ(defaults.images.max_px, 1568);
  EXPECT_EQ(defaults.images.max_bytes, 1024 * 1024);
  const auto set =
      config::fromJson({{"images", {{"max_per_call", 0}, {"max_px", 800}, {"max_bytes", 65536}}}});
  EXPECT_EQ(set.images.max_per_call, 0);
  EXPECT_EQ(config::fromJson(config::toJson(set)).images.max_px, 800);
  EXPECT_EQ(errorOf({{"images", {{"max_per_call", 33}}}}),
            "config: images.max_per_call must be <= 32");
  EXPECT_EQ(errorOf({{"images", {{"max_px", 10}}}}), "config: images.max_px must be >= 64");
  EXPECT_EQ(errorOf({{"images", {{"max_bytes", 5 * 1024 * 1024}}}}),
            "config: images.max_bytes must be <= 4194304 (4 MiB)");
  EXPECT_EQ(errorOf({{"images", {{"max_size", 1}}}}),
            "config: images.max_size is not a known setting");
}

TEST(Config, FilesNestedPastTheJsonDepthLimitAreRefused) {
  char name[] = "/tmp/parsing-config-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  ASSERT_EQ(write(fd, deep.data(), deep.size()), static_cast<ssize_t>(deep.size()));
  close(fd);
  try {
    (void)config::loadFile(name);
    ADD_FAILURE() << "a deeply nested config was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos)
        << e.what();
  }
  unlink(name);
}

TEST(Config, PreviewIsOffByDefault) {
  const auto p = config::fromJson(json::object()).preview;
  EXPECT_FALSE(p.enabled());
  EXPECT_EQ(p.listen, "");
  EXPECT_EQ(p.domain, "localhost");
  EXPECT_EQ(p.public_url, "");
  EXPECT_EQ(p.default_expires_s, 3600);
  EXPECT_EQ(p.max_expires_s, 86400);
  EXPECT_EQ(p.max_ports_per_session, 8);
  EXPECT_EQ(p.max_connections_per_session, 32);
  EXPECT_EQ(p.max_connections, 512);
  EXPECT_EQ(p.idle_timeout_s, 300);
  EXPECT_EQ(p.max_mib_per_session, 0);
  EXPECT_EQ(p.max_head_bytes, 32 * 1024);
  EXPECT_EQ(p.header_timeout_ms, 10000);
}

TEST(Config, PreviewReadsAFullSection) {
  const json section = {{"listen", "[::1]:8766"},
                        {"domain", "preview.example-1.com"},
                        {"public_url", "https://{label}.preview.example-1.com/"},
                        {"default_expires_s", 60},
                        {"max_expires_s", 60},
                        {"max_ports_per_session", 1},
                        {"max_connections_per_session", 4},
                        {"max_connections", 4},
                        {"idle_timeout_s", 1},
                        {"max_mib_per_session", 100},
                        {"max_head_bytes", 1024},
                        {"header_timeout_ms", 100}};
  const auto c = config::fromJson({{"preview", section}});
  const auto& p = c.preview;
  EXPECT_TRUE(p.enabled());
  EXPECT_EQ(p.listen, "[::1]:8766");
  EXPECT_EQ(p.domain, "preview.example-1.com");
  EXPECT_EQ(p.public_url, "https://{label}.preview.example-1.com/");
  EXPECT_EQ(p.default_expires_s, 60);
  EXPECT_EQ(p.max_expires_s, 60);
  EXPECT_EQ(p.max_ports_per_session, 1);
  EXPECT_EQ(p.max_connections_per_session, 4);
  EXPECT_EQ(p.max_connections, 4);
  EXPECT_EQ(p.idle_timeout_s, 1);
  EXPECT_EQ(p.max_mib_per_session, 100);
  EXPECT_EQ(p.max_head_bytes, 1024);
  EXPECT_EQ(p.header_timeout_ms, 100);
  const auto written = config::toJson(c)["preview"];
  for (const auto& [key, value] : section.items()) EXPECT_EQ(written[key], value) << key;
  EXPECT_EQ(config::toJson(config::fromJson(config::toJson(c))), config::toJson(c));
  for (const char* listen : {"127.0.0.1:8766", "0.0.0.0:0", "localhost:65535", "[::]:1"}) {
    EXPECT_EQ(config::fromJson({{"preview", {{"listen", listen}}}}).preview.listen, listen);
  }
}

TEST(Config, PreviewRefusesBadValuesNamingTheField) {
  const std::string listen = "config: preview.listen must be host:port, e.g. 127.0.0.1:8766";
  const std::string domain =
      "config: preview.domain must be a lower-case domain name, e.g. localhost or "
      "preview.example.com";
  const std::string public_url =
      "config: preview.public_url must be http(s)://{label}.<host>[:port]/ with the host under "
      "preview.domain, e.g. https://{label}.preview.example.com/";
  struct Row {
    const char* name;
    json section;
    std::string error;
  };
  const Row rows[] = {
      {"a port alone", {{"listen", "8766"}}, listen},
      {"a port past 65535", {{"listen", "127.0.0.1:99999"}}, listen},
      {"no host", {{"listen", ":8766"}}, listen},
      {"no port", {{"listen", "127.0.0.1:"}}, listen},
      {"a port not a number", {{"listen", "127.0.0.1:80x"}}, listen},
      {"ipv6 without brackets", {{"listen", "::1:8766"}}, listen},
      {"an unclosed bracket", {{"listen", "[::1:8766"}}, listen},
      {"a URL", {{"listen", "http://127.0.0.1:8766"}}, listen},
      {"a space in the domain", {{"domain", "Local Host"}}, domain},
      {"an upper-case domain", {{"domain", "LOCALHOST"}}, domain},
      {"an empty domain", {{"domain", ""}}, domain},
      {"a leading dot", {{"domain", ".localhost"}}, domain},
      {"a trailing dot", {{"domain", "localhost."}}, domain},
      {"an empty label", {{"domain", "preview..example.com"}}, domain},
      {"a port in the domain", {{"domain", "localhost:8766"}}, domain},
      {"public_url without {label}", {{"public_url", "https://preview.example.com/"}}, public_url},
      {"public_url with a path", {{"public_url", "https://{label}.localhost/app/"}}, public_url},
      {"public_url on another domain",
       {{"public_url", "https://{label}.example.com/"}},
       "config: preview.public_url its host after {label}. must be preview.domain (localhost)"},
      {"public_url with {label} twice",
       {{"public_url", "https://{label}.x.com/{label}"}},
       public_url},
      {"public_url not http(s)", {{"public_url", "ftp://{label}.example.com/"}}, public_url},
      {"public_url without a scheme", {{"public_url", "{label}.example.com"}}, public_url},
      {"default_expires_s 0",
       {{"default_expires_s", 0}},
       "config: preview.default_expires_s must be >= 1"},
      {"max_expires_s below default_expires_s",
       {{"default_expires_s", 600}, {"max_expires_s", 599}},
       "config: preview.max_expires_s must be >= 600"},
      {"max_ports_per_session 0",
       {{"max_ports_per_session", 0}},
       "config: preview.max_ports_per_session must be >= 1"},
      {"max_connections_per_session 0",
       {{"max_connections_per_session", 0}},
       "config: preview.max_connections_per_session must be >= 1"},
      {"max_connections below max_connections_per_session",
       {{"max_connections_per_session", 8}, {"max_connections", 7}},
       "config: preview.max_connections must be >= 8"},
      {"idle_timeout_s 0", {{"idle_timeout_s", 0}}, "config: preview.idle_timeout_s must be >= 1"},
      {"max_mib_per_session negative",
       {{"max_mib_per_session", -1}},
       "config: preview.max_mib_per_session must be >= 0"},
      {"max_head_bytes too small",
       {{"max_head_bytes", 1023}},
       "config: preview.max_head_bytes must be >= 1024"},
      {"header_timeout_ms too small",
       {{"header_timeout_ms", 99}},
       "config: preview.header_timeout_ms must be >= 100"},
      {"an unknown key",
       {{"listen_addr", "127.0.0.1:8766"}},
       "config: preview.listen_addr is not a known setting"},
      {"a number for listen",
       {{"listen", 8766}},
       "config: preview.listen has the wrong type (got 8766)"},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(errorOf({{"preview", row.section}}), row.error) << row.name;
  }
}

}  // namespace
