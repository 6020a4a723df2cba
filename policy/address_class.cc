// Classifies a resolved address so the sidecar never reaches private, loopback, link-local,
// metadata or otherwise special ranges unless an allowlist entry names the address.
#include <array>
#include <cstdint>
#include <optional>

#include "policy/internal.h"
#include "policy/policy.h"

namespace policy {
namespace {

struct Range {
  std::array<std::uint8_t, 16> prefix;
  unsigned bits;
  AddressClass value;
};

template <std::size_t N>
bool inRange(const std::array<std::uint8_t, N>& address, const std::array<std::uint8_t, 16>& prefix,
             unsigned bits) noexcept {
  for (unsigned i = 0; i < bits; ++i) {
    const unsigned mask = 0x80u >> (i % 8);
    if ((address[i / 8] & mask) != (prefix[i / 8] & mask)) return false;
  }
  return true;
}

// Most specific first: the first range that contains the address decides.
constexpr std::array<Range, 18> kIpv4Ranges{{
    {{169, 254, 169, 254}, 32, AddressClass::kMetadata},  // AWS, GCP, Azure, OpenStack
    {{169, 254, 170, 2}, 32, AddressClass::kMetadata},    // AWS ECS task metadata
    {{100, 100, 100, 200}, 32, AddressClass::kMetadata},  // Alibaba Cloud
    {{0}, 8, AddressClass::kUnspecified},
    {{10}, 8, AddressClass::kPrivate},
    {{100, 64}, 10, AddressClass::kSharedCgnat},
    {{127}, 8, AddressClass::kLoopback},
    {{169, 254}, 16, AddressClass::kLinkLocal},
    {{172, 16}, 12, AddressClass::kPrivate},
    {{192, 0, 0}, 24, AddressClass::kReserved},    // IETF protocol assignments
    {{192, 0, 2}, 24, AddressClass::kReserved},    // TEST-NET-1
    {{192, 88, 99}, 24, AddressClass::kReserved},  // 6to4 relay anycast
    {{192, 168}, 16, AddressClass::kPrivate},
    {{198, 18}, 15, AddressClass::kReserved},       // benchmarking
    {{198, 51, 100}, 24, AddressClass::kReserved},  // TEST-NET-2
    {{203, 0, 113}, 24, AddressClass::kReserved},   // TEST-NET-3
    {{224}, 4, AddressClass::kMulticast},
    {{240}, 4, AddressClass::kReserved},  // includes 255.255.255.255
}};

constexpr std::array<Range, 13> kIpv6Ranges{{
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 128, AddressClass::kUnspecified},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, AddressClass::kLoopback},
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
     128,
     AddressClass::kMetadata},  // AWS IMDS over IPv6: fd00:ec2::254
    {{0xfe, 0x80}, 10, AddressClass::kLinkLocal},
    {{0xfe, 0xc0}, 10, AddressClass::kPrivate},  // deprecated site-local
    {{0xfc}, 7, AddressClass::kPrivate},         // unique local
    {{0xff}, 8, AddressClass::kMulticast},
    {{0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64, AddressClass::kReserved},  // discard-only
    {{0x20, 0x01, 0x0d, 0xb8}, 32, AddressClass::kReserved},        // documentation
    {{0x20, 0x01, 0x00, 0x00}, 23, AddressClass::kReserved},        // IETF, incl. Teredo
    {{0x20, 0x02}, 16, AddressClass::kReserved},  // 6to4 embeds an arbitrary IPv4 address
    {{0x20}, 3, AddressClass::kPublic},           // global unicast
    {{0}, 0, AddressClass::kReserved},            // everything else is unallocated
}};

AddressClass classifyIpv4(const internal::Ipv4Bytes& bytes) noexcept {
  for (const Range& range : kIpv4Ranges) {
    if (inRange(bytes, range.prefix, range.bits)) return range.value;
  }
  return AddressClass::kPublic;
}

}  // namespace

AddressClass classifyAddress(const IpAddress& address) {
  if (!address.v6) {
    return classifyIpv4({address.bytes[0], address.bytes[1], address.bytes[2], address.bytes[3]});
  }
  if (const std::optional<internal::Ipv4Bytes> v4 = internal::embeddedIpv4(address)) {
    return classifyIpv4(*v4);
  }
  for (const Range& range : kIpv6Ranges) {
    if (inRange(address.bytes, range.prefix, range.bits)) return range.value;
  }
  return AddressClass::kReserved;
}

const char* toString(AddressClass value) {
  switch (value) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kMetadata:
      return "cloud metadata";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kSharedCgnat:
      return "shared (CGNAT)";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kReserved:
      return "reserved";
  }
  return "unknown";
}

}  // namespace policy
