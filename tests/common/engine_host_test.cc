#include "common/engine_host.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using common::EngineHost;
using common::parseEngineHost;

TEST(EngineHost, ParsesUnixSocketsAndTcpEndpoints) {
  struct Row {
    const char* text;
    bool tcp;
    const char* path;
    const char* host;
    int port;
    const char* canonical;
  };
  const std::vector<Row> rows = {
      {"unix:///var/run/docker.sock", false, "/var/run/docker.sock", "", 0,
       "unix:///var/run/docker.sock"},
      {"unix:///tmp/d.sock", false, "/tmp/d.sock", "", 0, "unix:///tmp/d.sock"},
      {"tcp://127.0.0.1:2376", true, "", "127.0.0.1", 2376, "tcp://127.0.0.1:2376"},
      {"tcp://engine.example-1.internal:1", true, "", "engine.example-1.internal", 1,
       "tcp://engine.example-1.internal:1"},
      {"tcp://[::1]:65535", true, "", "::1", 65535, "tcp://[::1]:65535"},
  };
  for (const auto& row : rows) {
    const EngineHost host = parseEngineHost(row.text);
    EXPECT_EQ(host.isTcp(), row.tcp) << row.text;
    EXPECT_EQ(host.path, row.path) << row.text;
    EXPECT_EQ(host.host, row.host) << row.text;
    EXPECT_EQ(host.port, row.port) << row.text;
    EXPECT_EQ(host.uri(), row.canonical) << row.text;
  }
  EXPECT_EQ(EngineHost().uri(), "unix:///var/run/docker.sock");
  EXPECT_EQ(EngineHost::unixSocket("/x.sock").uri(), "unix:///x.sock");
}

TEST(EngineHost, RefusesWhatItCannotConnectToAndSaysWhy) {
  struct Row {
    std::string text;
    const char* reason;
  };
  const std::vector<Row> rows = {
      {"/var/run/docker.sock", "must start with unix:// or tcp://"},
      {"ssh://me@engine", "must start with unix:// or tcp://"},
      {"https://127.0.0.1:2376", "must start with unix:// or tcp://"},
      {"npipe:////./pipe/docker_engine", "must start with unix:// or tcp://"},
      {"", "must start with unix:// or tcp://"},
      {"unix://", "needs an absolute socket path"},
      {"unix://run/docker.sock", "needs an absolute socket path"},
      {"unix:///" + std::string(200, 'a'), "at most 107 bytes"},
      {std::string("unix:///a\0b", 11), "no NUL"},
      {"tcp://127.0.0.1", "needs a port"},
      {"tcp://:2376", "needs a host name or IP address"},
      {"tcp://user@host:2376", "needs a host name or IP address"},
      {"tcp://127.0.0.1:0", "a port from 1 to 65535"},
      {"tcp://127.0.0.1:65536", "a port from 1 to 65535"},
      {"tcp://127.0.0.1:2376/v1.41", "no path"},
      {"tcp://127.0.0.1:23x", "a port from 1 to 65535"},
      {"tcp://127.0.0.1:", "a port from 1 to 65535"},
      {"tcp://[::1", "unclosed '['"},
      {"tcp://[]:1", "invalid IPv6 address"},
      {"tcp://[::1]", "needs ':PORT' after the ']'"},
      {"tcp://[::1]2376", "needs ':PORT' after the ']'"},
  };
  for (const auto& row : rows) {
    try {
      (void)parseEngineHost(row.text);
      ADD_FAILURE() << "accepted: " << row.text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(row.reason), std::string::npos)
          << row.text << ": " << e.what();
    }
  }
}

}  // namespace
