// libFuzzer target: proto::mapPacket() (the 1:1 mapped ranges) on any bytes
// as an IPv4 or IPv6 packet, with a rule taken from the input.
//
// Input: a control byte (bit 0 IPv6, bit 1 translate the destination, bit 2
// fix the checksums first), the prefix length, 16 bytes `from`, 16 bytes
// `to`, then the packet, in a heap buffer of exactly its size (ASan sees any
// access beyond it).  Checked:
//   * nothing changes when nothing was translated, and bytes past the IP
//     packet's own length never change;
//   * checksums that were right stay right: the IPv4 header's, and for a
//     whole packet (no fragment) TCP / UDP / ICMPv6 over the pseudo-header
//     and ICMP over its message;
//   * translating back (the reverse rule, the same field) restores every
//     byte, when the reverse rule alone would change nothing in the input
//     (no address there is already in the `to` range); a checksum may come
//     back as the other form of zero (0x0000 / 0xffff), nothing else.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/prefix_map.hpp"

using namespace mcgw::proto;

namespace {

#define CHECK(cond)     \
  do {                  \
    if (!(cond)) {      \
      __builtin_trap(); \
    }                   \
  } while (0)

void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// The IP packet's own length (0: it does not parse as mapPacket wants).
size_t ipLength(const uint8_t* ip, size_t len, bool v6) {
  const Bytes b(reinterpret_cast<const std::byte*>(ip), len);
  if (!v6) {
    auto p = parseIpv4(b);
    return p.ok() ? p.header_length + p.payload.size() : 0;
  }
  auto p = parseIpv6(b);
  return p.ip.ok() ? sizeof(Ipv6Header) + p.ip.payload.size() : 0;
}

// A whole (unfragmented) packet's transport bytes and checksum sums.
struct Transport {
  const uint8_t* at = nullptr;
  size_t length = 0;
  uint8_t protocol = 0;
  uint32_t pseudo = 0;
  int checksum = -1;  // offset of the checksum in the transport header
};

bool transport(const uint8_t* ip, size_t len, bool v6, Transport* t) {
  const Bytes b(reinterpret_cast<const std::byte*>(ip), len);
  if (!v6) {
    auto p = parseIpv4(b);
    if (!p.ok() || p.header->isFragment()) {
      return false;
    }
    t->at = ip + p.header_length;
    t->length = p.payload.size();
    t->protocol = p.header->protocol;
    if (t->protocol != kIpProtoIcmp) {
      t->pseudo = pseudoHeaderV4(p.header->src, p.header->dst, t->protocol,
                                 static_cast<uint16_t>(t->length));
    }
  } else {
    auto p = parseIpv6(b);
    if (!p.ip.ok() || p.fragment || p.upper.empty()) {
      return false;
    }
    t->at = reinterpret_cast<const uint8_t*>(p.upper.data());
    t->length = p.upper.size();
    t->protocol = p.upper_protocol;
    t->pseudo = pseudoHeaderV6(p.ip.header->src, p.ip.header->dst, t->protocol,
                               static_cast<uint32_t>(t->length));
  }
  switch (t->protocol) {
    case kIpProtoTcp:
      t->checksum = 16;
      break;
    case kIpProtoUdp:
      t->checksum = 6;
      break;
    case kIpProtoIcmp:
      t->checksum = v6 ? -1 : 2;
      break;
    case kIpProtoIpv6Icmp:
      t->checksum = v6 ? 2 : -1;
      break;
    default:
      break;
  }
  return t->checksum >= 0 && t->length >= static_cast<size_t>(t->checksum) + 2;
}

// Whether the transport checksum verifies (UDP's 0: there is none).
bool transportRight(const Transport& t) {
  if (t.protocol == kIpProtoUdp && (t.at[6] | t.at[7]) == 0) {
    return true;
  }
  const uint16_t r = checksumFold(
      checksumAdd(Bytes(reinterpret_cast<const std::byte*>(t.at), t.length), t.pseudo));
  return r == 0xffff;
}

bool ipv4HeaderRight(const uint8_t* ip) {
  const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  return checksumFold(checksumAdd(Bytes(reinterpret_cast<const std::byte*>(ip), hl))) == 0xffff;
}

void fixChecksums(uint8_t* ip, size_t len, bool v6) {
  if (!ipLength(ip, len, v6)) {
    return;
  }
  if (!v6) {
    const size_t hl = static_cast<size_t>(ip[0] & 0x0f) * 4;
    store16(ip + 10, 0);
    store16(ip + 10, internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), hl)));
  }
  Transport t;
  if (transport(ip, len, v6, &t)) {
    auto* c = const_cast<uint8_t*>(t.at) + t.checksum;
    if (t.protocol == kIpProtoUdp && (c[0] | c[1]) == 0) {
      return;  // no checksum
    }
    store16(c, 0);
    uint16_t v =
        internetChecksum(Bytes(reinterpret_cast<const std::byte*>(t.at), t.length), t.pseudo);
    if (t.protocol == kIpProtoUdp && v == 0) {
      v = 0xffff;
    }
    store16(c, v);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 34) {
    return 0;
  }
  const bool v6 = data[0] & 1;
  const AddressField field = data[0] & 2 ? AddressField::kDestination : AddressField::kSource;
  const bool fix = data[0] & 4;
  const auto length = static_cast<uint8_t>(data[1] % (v6 ? 129 : 33));
  const uint8_t* from = data + 2;
  const uint8_t* to = data + 18;
  const size_t n = size - 34;

  PrefixMapTable forth, back;
  CHECK(forth.assign({PrefixRule::make(v6, from, to, length, 1)}));
  CHECK(back.assign({PrefixRule::make(v6, to, from, length, 2)}));

  std::unique_ptr<uint8_t[]> buf(new uint8_t[n ? n : 1]);
  std::memcpy(buf.get(), data + 34, n);
  if (fix) {
    fixChecksums(buf.get(), n, v6);
  }
  std::unique_ptr<uint8_t[]> before(new uint8_t[n ? n : 1]);
  std::memcpy(before.get(), buf.get(), n);
  const size_t ip_len = ipLength(buf.get(), n, v6);
  Transport t;
  const bool has_transport = transport(buf.get(), n, v6, &t);
  const bool transport_right = has_transport && transportRight(t);
  const bool header_right = !v6 && ip_len && ipv4HeaderRight(buf.get());

  const MapResult r = mapPacket(buf.get(), n, v6, field, forth);
  if (!r.changed()) {
    CHECK(std::memcmp(buf.get(), before.get(), n) == 0);
    return 0;
  }
  if (v6 && ip_len == 0) {
    // Extension headers that do not parse: only the fixed header's address
    // is translated (a real address must not leave the site), nothing else.
    CHECK(n >= 40 && r.outer && !r.inner);
    const size_t at = field == AddressField::kSource ? 8 : 24;
    CHECK(std::memcmp(buf.get(), before.get(), at) == 0);
    CHECK(std::memcmp(buf.get() + at + 16, before.get() + at + 16, n - at - 16) == 0);
    return 0;
  }
  CHECK(ip_len > 0);
  CHECK(std::memcmp(buf.get() + ip_len, before.get() + ip_len, n - ip_len) == 0);
  if (header_right) {
    CHECK(ipv4HeaderRight(buf.get()));
  }
  if (transport_right) {
    Transport after;
    CHECK(transport(buf.get(), n, v6, &after));
    CHECK(transportRight(after));
  }

  // Back again, when the reverse rule finds nothing of its own in the input.
  std::unique_ptr<uint8_t[]> probe(new uint8_t[n ? n : 1]);
  std::memcpy(probe.get(), before.get(), n);
  if (mapPacket(probe.get(), n, v6, field, back).changed()) {
    return 0;
  }
  CHECK(mapPacket(buf.get(), n, v6, field, back).changed());
  for (size_t i = 0; i + 1 < n; i += 2) {
    const uint16_t was = static_cast<uint16_t>(before[i] << 8 | before[i + 1]);
    const uint16_t is = static_cast<uint16_t>(buf[i] << 8 | buf[i + 1]);
    CHECK(was == is || (was == 0xffff && is == 0) || (was == 0 && is == 0xffff));
  }
  if (n & 1) {
    CHECK(buf[n - 1] == before[n - 1]);
  }
  return 0;
}
