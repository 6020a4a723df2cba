// The SNI reader for CONNECT tunnels (sidecar/tls_client_hello.h) against ClientHellos built here
// byte by byte: the name comes out lowercase whatever else the hello carries; every prefix asks
// for more and never decides; malformed or ambiguous hellos, and ones hiding their name (ECH,
// ESNI), are refused with a reason; and thousands of mutated hellos never read past what was
// received (ASan) nor yield a bad name.
#include "sidecar/tls_client_hello.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using sidecar::ClientHelloScan;
using Status = ClientHelloScan::Status;

std::string be(std::size_t value, std::size_t width) {
  std::string out(width, '\0');
  for (std::size_t i = 0; i < width; ++i) {
    out[width - 1 - i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
  return out;
}

using Extension = std::pair<std::uint16_t, std::string>;

std::string sniBody(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& name : names) list += be(0, 1) + be(name.size(), 2) + name;
  return be(list.size(), 2) + list;
}

std::string clientHello(const std::vector<Extension>& extensions, bool with_extensions = true,
                        const std::string& session_id = std::string(32, 's')) {
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + be(session_id.size(), 1) +
                     session_id + be(4, 2) + std::string("\x13\x01\x13\x02", 4) + be(1, 1) +
                     std::string(1, '\0');
  if (with_extensions) {
    std::string block;
    for (const auto& [type, data] : extensions) block += be(type, 2) + be(data.size(), 2) + data;
    body += be(block.size(), 2) + block;
  }
  const std::string handshake = std::string(1, '\x01') + be(body.size(), 3) + body;
  return std::string("\x16\x03\x01", 3) + be(handshake.size(), 2) + handshake;
}

// As a current browser sends it: supported_versions, the name, a large key share.
std::string browserHello(const std::string& name) {
  return clientHello({{43, std::string("\x02\x03\x04", 3)},
                      {0, sniBody({name})},
                      {51, std::string(1250, 'k')},
                      {16, std::string("\x00\x03\x02h2", 5)}});
}

TEST(TlsClientHello, ReadsTheServerNameLowercase) {
  const auto hello = browserHello("Files.PythonHosted.org");
  const auto scan = sidecar::scanClientHello(hello);
  ASSERT_EQ(scan.status, Status::kServerName) << scan.error;
  EXPECT_EQ(scan.server_name, "files.pythonhosted.org");
  const auto with_more = sidecar::scanClientHello(hello + std::string(100, 'x'));
  EXPECT_EQ(with_more.server_name, "files.pythonhosted.org")
      << "what follows the record is not read";
}

// What `openssl s_client -servername Files.PythonHosted.ORG` (OpenSSL 3.0, Debian 12) sent first.
const char* const kOpenSslHelloHex =
    "16030101430100013f0303b7ba152dd21ab0d9a3a44c8357aac0dee3496172a3d8f5258de2b08bd70a76a820"
    "cc4b36c344dd283f736e13f4a72ce55ba5d1a114d1188e8c005153088885ba40003e130213031301c02cc030"
    "009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d"
    "003c0035002f00ff010000b80000001b001900001646696c65732e507974686f6e486f737465642e4f524700"
    "0b000403000102000a00160014001d0017001e00190018010001010102010301040023000000160000001700"
    "00000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205"
    "020602002b0009080304030303020301002d00020101003300260024001d00208716bedd4a303dc21f16bab3"
    "06419f0fbd0819e4b8d148aae80a7893b885a22a";

std::string fromHex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(TlsClientHello, ReadsWhatOpenSslSends) {
  const auto scan = sidecar::scanClientHello(fromHex(kOpenSslHelloHex));
  ASSERT_EQ(scan.status, Status::kServerName) << scan.error;
  EXPECT_EQ(scan.server_name, "files.pythonhosted.org");
}

TEST(TlsClientHello, EveryPrefixAsksForMore) {
  const auto hello = browserHello("pypi.org");
  for (std::size_t size = 0; size < hello.size(); ++size) {
    const auto scan = sidecar::scanClientHello(std::string_view(hello).substr(0, size));
    ASSERT_EQ(scan.status, Status::kNeedMore) << "decided on " << size << " bytes: " << scan.error;
  }
}

TEST(TlsClientHello, AHelloWithoutANameHasNone) {
  EXPECT_EQ(sidecar::scanClientHello(clientHello({}, /*with_extensions=*/false)).status,
            Status::kNoServerName);
  EXPECT_EQ(sidecar::scanClientHello(clientHello({{43, std::string("\x02\x03\x04", 3)}})).status,
            Status::kNoServerName);
}

TEST(TlsClientHello, RefusesWhatIsNotOneClearName) {
  struct Row {
    std::string name;
    std::string bytes;
    std::string error;
  };
  std::string long_record = clientHello({{0, sniBody({"a.example"})}});
  long_record[3] = '\x40';  // 16384 + 1 bytes claimed
  long_record[4] = '\x01';
  std::string hello_past_record = clientHello({{0, sniBody({"a.example"})}});
  hello_past_record[8] = static_cast<char>(hello_past_record[8] + 1);  // handshake length + 1
  std::string server_hello = clientHello({});
  server_hello[5] = '\x02';
  std::string ssl2 = clientHello({});
  ssl2[1] = '\x02';
  const std::vector<Row> rows = {
      {"plain HTTP", "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", "not TLS"},
      {"an alert record", std::string("\x15\x03\x03\x00\x02\x02\x28", 7), "not TLS"},
      {"another record version", ssl2, "record version"},
      {"an empty record", std::string("\x16\x03\x01\x00\x00", 5), "bad length"},
      {"a record past 16 KiB", long_record, "bad length"},
      {"a ServerHello", server_hello, "not a ClientHello"},
      {"a hello past its record", hello_past_record, "several records"},
      {"two host names", clientHello({{0, sniBody({"a.example", "b.example"})}}), "two host names"},
      {"two server_name extensions",
       clientHello({{0, sniBody({"a.example"})}, {0, sniBody({"a.example"})}}), "two server_name"},
      {"a trailing dot", clientHello({{0, sniBody({"a.example."})}}), "not a host name"},
      {"a space", clientHello({{0, sniBody({"a .example"})}}), "not a host name"},
      {"an empty label", clientHello({{0, sniBody({"a..example"})}}), "not a host name"},
      {"an empty name", clientHello({{0, sniBody({""})}}), "not a host name"},
      {"a NUL", clientHello({{0, sniBody({std::string("a\0.example", 10)})}}), "not a host name"},
      {"a 64-byte label", clientHello({{0, sniBody({std::string(64, 'a') + ".example"})}}),
       "not a host name"},
      {"a session id of 33 bytes", clientHello({}, true, std::string(33, 's')), "malformed"},
      {"an extension past its block", clientHello({{0, std::string("\x00\x09", 2)}}),
       "malformed server_name"},
  };
  for (const auto& row : rows) {
    const auto scan = sidecar::scanClientHello(row.bytes);
    EXPECT_EQ(scan.status, Status::kInvalid) << row.name << ": " << scan.server_name;
    EXPECT_NE(scan.error.find(row.error), std::string::npos) << row.name << ": " << scan.error;
  }
}

// An ECHClientHello of type outer (draft-ietf-tls-esni section 5): HPKE suite, config id, the
// encapsulated key and the encrypted inner ClientHello, which names the host actually reached.
std::string echOuterBody() {
  return std::string(1, '\0') + be(1, 2) + be(1, 2) + be(0x2a, 1) + be(32, 2) +
         std::string(32, 'e') + be(200, 2) + std::string(200, 'p');
}

constexpr std::uint16_t kEch = 0xfe0d;
constexpr std::uint16_t kEsni = 0xffce;

// The outer name may be the very host the tunnel was opened for: the CDN front serves the inner
// one. So the extension is refused whatever the clear name, and wherever it sits.
TEST(TlsClientHello, RefusesAHelloThatHidesItsName) {
  struct Row {
    std::string name;
    std::string bytes;
    std::string error;
  };
  const std::string versions("\x02\x03\x04", 3);
  const std::string ech_reason =
      "offers Encrypted Client Hello (ECH), which hides the server name the proxy must check; "
      "turn ECH off in the client";
  const std::string esni_reason =
      "offers encrypted SNI (ESNI), which hides the server name the proxy must check; turn ESNI "
      "off in the client";
  const std::vector<Row> rows = {
      {"ECH behind the allowed name",
       clientHello({{43, versions}, {0, sniBody({"registry.npmjs.org"})}, {kEch, echOuterBody()}}),
       ech_reason},
      {"ECH before the name",
       clientHello({{kEch, echOuterBody()}, {0, sniBody({"registry.npmjs.org"})}}), ech_reason},
      {"ECH without a clear name", clientHello({{43, versions}, {kEch, echOuterBody()}}),
       ech_reason},
      {"an empty ECH extension",
       clientHello({{0, sniBody({"registry.npmjs.org"})}, {kEch, std::string()}}), ech_reason},
      {"an ECH of type inner",
       clientHello({{0, sniBody({"registry.npmjs.org"})}, {kEch, std::string(1, '\x01')}}),
       ech_reason},
      {"ESNI behind the allowed name",
       clientHello({{0, sniBody({"registry.npmjs.org"})}, {kEsni, std::string(64, 'x')}}),
       esni_reason},
  };
  for (const auto& row : rows) {
    const auto scan = sidecar::scanClientHello(row.bytes);
    ASSERT_EQ(scan.status, Status::kInvalid) << row.name << ": " << scan.server_name;
    EXPECT_NE(scan.error.find(row.error), std::string::npos) << row.name << ": " << scan.error;
    EXPECT_NE(sidecar::serverNameMismatch(scan, "registry.npmjs.org", false).find(row.error),
              std::string::npos)
        << row.name << ": the tunnel to the allowed host is refused too";
  }
}

TEST(TlsClientHello, AHelloWithoutEchStillPasses) {
  const std::string versions("\x02\x03\x04", 3);
  // Extension types around ECH's and a GREASE one (RFC 8701) are not ECH.
  const auto hello = clientHello({{0x0a0a, std::string()},
                                  {43, versions},
                                  {0, sniBody({"registry.npmjs.org"})},
                                  {0xfe0c, std::string(8, 'x')},
                                  {0xfe0e, std::string(8, 'x')},
                                  {0xffcd, std::string(8, 'x')},
                                  {51, std::string(100, 'k')}});
  const auto scan = sidecar::scanClientHello(hello);
  ASSERT_EQ(scan.status, Status::kServerName) << scan.error;
  EXPECT_EQ(scan.server_name, "registry.npmjs.org");
  EXPECT_EQ(sidecar::serverNameMismatch(scan, "registry.npmjs.org", false), "");
  const auto browser = sidecar::scanClientHello(browserHello("registry.npmjs.org"));
  EXPECT_EQ(sidecar::serverNameMismatch(browser, "registry.npmjs.org", false), "");
  const auto openssl = sidecar::scanClientHello(fromHex(kOpenSslHelloHex));
  EXPECT_EQ(sidecar::serverNameMismatch(openssl, "files.pythonhosted.org", false), "");
}

TEST(TlsClientHello, TheNameMustBeTheConnectHost) {
  const auto pypi = sidecar::scanClientHello(browserHello("PyPI.org"));
  EXPECT_EQ(sidecar::serverNameMismatch(pypi, "pypi.org", false), "");
  EXPECT_NE(sidecar::serverNameMismatch(pypi, "evil.example", false).find("names pypi.org"),
            std::string::npos);
  EXPECT_NE(sidecar::serverNameMismatch(pypi, "151.101.0.223", true), "")
      << "a tunnel to an address carries no other name";
  // Node.js names the address itself (RFC 6066 says not to): the same destination, so it passes.
  const auto node = sidecar::scanClientHello(browserHello("151.101.0.223"));
  EXPECT_EQ(sidecar::serverNameMismatch(node, "151.101.0.223", true), "");
  EXPECT_NE(sidecar::serverNameMismatch(node, "151.101.0.224", true), "");
  const auto nameless = sidecar::scanClientHello(clientHello({}, false));
  EXPECT_EQ(sidecar::serverNameMismatch(nameless, "151.101.0.223", true), "");
  EXPECT_NE(sidecar::serverNameMismatch(nameless, "pypi.org", false).find("names no server"),
            std::string::npos);
  EXPECT_NE(sidecar::serverNameMismatch(ClientHelloScan{}, "pypi.org", false), "");
}

TEST(TlsClientHello, MutatedHellosNeverReadPastTheirBytesNorYieldABadName) {
  const auto hello = browserHello("registry.npmjs.org");
  std::mt19937 random(20261126);  // fixed: a failure reproduces
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = hello;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      const auto at = random() % bytes.size();
      switch (random() % 3) {
        case 0:
          bytes[at] = static_cast<char>(random() & 0xff);
          break;
        case 1:
          bytes.resize(at);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(random() & 0xff));
          break;
      }
      if (bytes.empty()) bytes = hello;
    }
    const auto scan = sidecar::scanClientHello(bytes);
    if (scan.status == Status::kServerName) {
      ASSERT_FALSE(scan.server_name.empty());
      for (const char c : scan.server_name) {
        ASSERT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                    c == '_')
            << "round " << round;
      }
    }
    if (scan.status == Status::kInvalid) {
      ASSERT_FALSE(scan.error.empty());
    }
  }
}

}  // namespace
