// The server name a TLS ClientHello asks for (SNI, RFC 6066 section 3), read from the first bytes
// a client sends through a CONNECT tunnel: the egress proxy passes TLS through unopened, and
// refuses a tunnel whose ClientHello names another host than the one its CONNECT was allowed for
// (domain fronting, or a tunnel opened for an allowed name and used for another), or that hides
// the name it asks for (Encrypted Client Hello, or the older encrypted SNI). Only the first TLS
// record is read (a ClientHello fits one: at most 16 KiB). Hostile input: every length is checked
// against the bytes received. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sidecar {

// A TLS record's header (5 bytes) and the largest payload a record may carry (RFC 8446 5.1).
inline constexpr std::size_t kTlsRecordHeaderBytes = 5;
inline constexpr std::size_t kMaxTlsRecordPayload = 16384;
// More than this and the first record is complete or the bytes are not a ClientHello.
inline constexpr std::size_t kMaxClientHelloBytes = kTlsRecordHeaderBytes + kMaxTlsRecordPayload;

struct ClientHelloScan {
  enum class Status {
    kNeedMore,      // a prefix of a record: read more (up to kMaxClientHelloBytes)
    kServerName,    // server_name holds the one host_name, lowercase
    kNoServerName,  // a well-formed ClientHello without SNI (e.g. to an IP address)
    kInvalid,       // not a TLS ClientHello, a malformed one, or one hiding its server name
                    // (ECH, ESNI): `error` says what
  };
  Status status = Status::kNeedMore;
  std::string server_name;
  std::string error;
};

[[nodiscard]] ClientHelloScan scanClientHello(std::string_view bytes);

// Whether a tunnel to `connect_host` (canonical, as policy::parseConnectTarget writes it; an IP
// literal when `connect_host_is_address`) may carry this ClientHello: a name must be the CONNECT
// host itself (case-insensitive); an address must come without a name, or with that address
// itself as the name (Node.js sends one). Returns the reason it may
// not, or an empty string.
[[nodiscard]] std::string serverNameMismatch(const ClientHelloScan& scan,
                                             std::string_view connect_host,
                                             bool connect_host_is_address);

}  // namespace sidecar
