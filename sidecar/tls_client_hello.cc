#include "sidecar/tls_client_hello.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace sidecar {
namespace {

constexpr std::uint8_t kHandshakeRecord = 22;
constexpr std::uint8_t kClientHello = 1;
constexpr std::uint16_t kServerNameExtension = 0;
// Encrypted Client Hello (draft-ietf-tls-esni) and the encrypted_server_name of its earlier drafts.
constexpr std::uint16_t kEncryptedClientHelloExtension = 0xfe0d;
constexpr std::uint16_t kEncryptedServerNameExtension = 0xffce;
constexpr std::uint8_t kHostNameType = 0;
constexpr std::size_t kMaxHostName = 253;

using Status = ClientHelloScan::Status;

ClientHelloScan invalid(std::string error) {
  return ClientHelloScan{Status::kInvalid, {}, std::move(error)};
}

// Reads big-endian fields off a byte range; any read past its end makes ok() false for good.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  std::uint32_t number(std::size_t width) {
    if (!ok_ || bytes_.size() < width) {
      ok_ = false;
      return 0;
    }
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < width; ++i) {
      value = (value << 8) | static_cast<std::uint8_t>(bytes_[i]);
    }
    bytes_.remove_prefix(width);
    return value;
  }
  std::string_view take(std::size_t count) {
    if (!ok_ || bytes_.size() < count) {
      ok_ = false;
      return {};
    }
    const auto taken = bytes_.substr(0, count);
    bytes_.remove_prefix(count);
    return taken;
  }
  // A field prefixed by its length in `width` bytes.
  std::string_view vector(std::size_t width) { return take(number(width)); }

  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }

 private:
  std::string_view bytes_;
  bool ok_ = true;
};

// RFC 6066: ASCII, no trailing dot; letters, digits, '-' and '.', in labels of 1-63.
std::optional<std::string> hostName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostName || name.back() == '.' || name.front() == '.') {
    return std::nullopt;
  }
  std::string lower;
  std::size_t label = 0;
  for (const char c : name) {
    if (c == '.') {
      if (label == 0) return std::nullopt;
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_') {
      if (++label > 63) return std::nullopt;
    } else {
      return std::nullopt;
    }
    lower.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return lower;
}

// The server_name extension's body: one host_name entry.
ClientHelloScan serverNameOf(std::string_view body) {
  Reader reader(body);
  Reader list(reader.vector(2));
  if (!reader.ok() || !reader.empty()) return invalid("a malformed server_name extension");
  std::optional<std::string> found;
  while (!list.empty()) {
    const auto type = list.number(1);
    const auto name = list.vector(2);
    if (!list.ok()) return invalid("a malformed server_name list");
    if (type != kHostNameType) continue;  // other name types: none defined, ignored
    if (found) return invalid("a ClientHello naming two host names");
    found = hostName(name);
    if (!found) return invalid("a server name that is not a host name");
  }
  if (!found) return ClientHelloScan{Status::kNoServerName, {}, {}};
  return ClientHelloScan{Status::kServerName, *found, {}};
}

// With ECH (or ESNI) the server_name in the clear is only a public name of a CDN front, which
// serves the host named in the encrypted part: checking the clear name would let a tunnel allowed
// for one site of a CDN reach any other. A GREASE ECH cannot be told from a real one, so both are
// refused. Returns why the extension is refused, or nothing for any other extension.
std::optional<std::string> hidesTheServerName(std::uint32_t type) {
  if (type == kEncryptedClientHelloExtension) {
    return "the TLS ClientHello offers Encrypted Client Hello (ECH), which hides the server name "
           "the proxy must check; turn ECH off in the client";
  }
  if (type == kEncryptedServerNameExtension) {
    return "the TLS ClientHello offers encrypted SNI (ESNI), which hides the server name the "
           "proxy must check; turn ESNI off in the client";
  }
  return std::nullopt;
}

}  // namespace

ClientHelloScan scanClientHello(std::string_view bytes) {
  if (bytes.empty()) return {};
  if (static_cast<std::uint8_t>(bytes[0]) != kHandshakeRecord) {
    return invalid("not TLS: the first byte is not a handshake record");
  }
  if (bytes.size() < kTlsRecordHeaderBytes) return {};
  Reader header(bytes.substr(0, kTlsRecordHeaderBytes));
  (void)header.number(1);
  const auto major = header.number(1);
  (void)header.number(1);
  const auto length = header.number(2);
  if (major != 3) return invalid("not TLS: an unknown record version");
  if (length == 0 || length > kMaxTlsRecordPayload) return invalid("a TLS record of a bad length");
  if (bytes.size() < kTlsRecordHeaderBytes + length) return {};

  Reader record(bytes.substr(kTlsRecordHeaderBytes, length));
  if (record.number(1) != kClientHello) return invalid("the first handshake is not a ClientHello");
  const auto hello_length = record.number(3);
  if (!record.ok()) return invalid("a truncated handshake header");
  if (hello_length > length - 4) {
    return invalid("a ClientHello split over several records (not supported)");
  }
  Reader hello(record.take(hello_length));
  (void)hello.number(2);  // legacy_version
  (void)hello.take(32);   // random
  const auto session_id = hello.vector(1);
  const auto cipher_suites = hello.vector(2);
  const auto compression = hello.vector(1);
  if (!hello.ok() || session_id.size() > 32 || cipher_suites.empty() ||
      cipher_suites.size() % 2 != 0 || compression.empty()) {
    return invalid("a malformed ClientHello");
  }
  if (hello.empty()) return ClientHelloScan{Status::kNoServerName, {}, {}};  // no extensions
  Reader extensions(hello.vector(2));
  if (!hello.ok() || !hello.empty()) return invalid("a malformed extensions block");
  std::optional<ClientHelloScan> named;
  while (!extensions.empty()) {
    const auto type = extensions.number(2);
    const auto body = extensions.vector(2);
    if (!extensions.ok()) return invalid("a malformed extension");
    if (auto hidden = hidesTheServerName(type)) return invalid(std::move(*hidden));
    if (type != kServerNameExtension) continue;
    if (named) return invalid("a ClientHello with two server_name extensions");
    named = serverNameOf(body);
    if (named->status == Status::kInvalid) return *named;
  }
  return named.value_or(ClientHelloScan{Status::kNoServerName, {}, {}});
}

std::string serverNameMismatch(const ClientHelloScan& scan, std::string_view connect_host,
                               bool connect_host_is_address) {
  switch (scan.status) {
    case Status::kNeedMore:
      return "the ClientHello was cut short";
    case Status::kInvalid:
      return scan.error;
    case Status::kNoServerName:
      if (connect_host_is_address) return {};
      return "the TLS ClientHello names no server, but the tunnel was opened for " +
             std::string(connect_host);
    case Status::kServerName:
      // Some clients (Node.js up to 20) put an IP address in SNI, which RFC 6066 forbids; the
      // address the tunnel was opened for is the same destination, so it passes.
      if (scan.server_name == connect_host) return {};
      return "the TLS ClientHello names " + scan.server_name + ", but the tunnel was opened for " +
             std::string(connect_host);
  }
  return "unknown";
}

}  // namespace sidecar
