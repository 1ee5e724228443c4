#include "dataplane/proto/icmp_error.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"

namespace mcgw::proto {

namespace {

const uint8_t* u8(Bytes b) {
  return reinterpret_cast<const uint8_t*>(b.data());
}

bool ipv4Multicast(const uint8_t a[4]) {
  return a[0] >= 224 && a[0] <= 239;
}

bool ipv4LimitedBroadcast(const uint8_t a[4]) {
  return a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255;
}

bool mayAnswer4(Bytes b) {
  const auto p = parseIpv4(b);
  if (!p.ok()) {
    return false;
  }
  const Ipv4Header& h = *p.header;
  if (h.fragmentOffset() != 0) {
    return false;
  }
  // Not a single host: multicast, class E, limited broadcast (all >= 224),
  // "this network", loopback.
  if (h.src[0] >= 224 || h.src[0] == 0 || h.src[0] == 127) {
    return false;
  }
  if (ipv4Multicast(h.dst) || ipv4LimitedBroadcast(h.dst)) {
    return false;
  }
  if (h.protocol == kIpProtoIcmp) {
    return !p.payload.empty() && !isIcmpError(u8(p.payload)[0]);
  }
  return true;
}

bool mayAnswer6(Bytes b) {
  static constexpr uint8_t kUnspecified[16] = {};
  static constexpr uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const Ipv6Packet p = parseIpv6(b);
  if (!p.ip.ok() || !p.first_fragment) {
    return false;
  }
  const Ipv6Header& h = *p.ip.header;
  if (h.src[0] == 0xff || std::memcmp(h.src, kUnspecified, 16) == 0 ||
      std::memcmp(h.src, kLoopback, 16) == 0 || h.dst[0] == 0xff) {
    return false;
  }
  if (p.upper_protocol == kIpProtoIpv6Icmp) {
    return !p.upper.empty() && !isIcmp6Error(u8(p.upper)[0]);
  }
  return true;
}

}  // namespace

bool mayAnswer(Bytes ip_packet, bool v6) {
  return v6 ? mayAnswer6(ip_packet) : mayAnswer4(ip_packet);
}

size_t buildIcmpError(MutableBytes out, Bytes offending, bool v6, IcmpErrorKind kind, uint32_t mtu,
                      const uint8_t* source, uint8_t ttl_restore) {
  if (!source || !mayAnswer(offending, v6)) {
    return 0;
  }
  const uint8_t* orig = u8(offending);
  const size_t ip_header = v6 ? sizeof(Ipv6Header) : sizeof(Ipv4Header);
  const size_t head = ip_header + sizeof(IcmpHeader);
  // The offending packet's own length (without link padding), and the least
  // quote worth sending: its IP header and 8 bytes (RFC 792).
  size_t length;
  size_t min_quote;
  if (v6) {
    const auto* h = reinterpret_cast<const Ipv6Header*>(orig);
    length = sizeof(Ipv6Header) + h->payload_length.get();
    min_quote = std::min(length, sizeof(Ipv6Header) + 8);
  } else {
    const auto* h = reinterpret_cast<const Ipv4Header*>(orig);
    length = h->total_length.get();
    min_quote = std::min(length, h->headerLength() + 8);
  }
  const size_t room = std::min(out.size(), v6 ? kIcmpErrorMaxIpv6 : kIcmpErrorMaxIpv4);
  if (room < head + min_quote) {
    return 0;
  }
  const size_t quote = std::min(length, room - head);
  const size_t icmp_length = sizeof(IcmpHeader) + quote;
  auto* o = reinterpret_cast<uint8_t*>(out.data());

  // The quote, with the TTL / hop limit as the sender sent it.
  uint8_t* q = o + head;
  std::memcpy(q, orig, quote);
  if (ttl_restore) {
    if (v6) {
      q[7] = static_cast<uint8_t>(q[7] + ttl_restore);  // min_quote covers the header
    } else {
      const uint16_t before = static_cast<uint16_t>(q[8] << 8 | q[9]);
      q[8] = static_cast<uint8_t>(q[8] + ttl_restore);
      const uint16_t after = static_cast<uint16_t>(q[8] << 8 | q[9]);
      auto* qh = reinterpret_cast<Ipv4Header*>(q);
      qh->checksum.set(checksumUpdate16(qh->checksum.get(), before, after));
    }
  }

  auto* icmp = reinterpret_cast<IcmpHeader*>(o + ip_header);
  icmp->code = 0;
  icmp->rest.set(0);
  icmp->checksum.set(0);
  if (kind == IcmpErrorKind::kTooBig) {
    icmp->type = v6 ? kIcmp6PacketTooBig : kIcmpDestUnreachable;
    if (v6) {
      icmp->rest.set(mtu);
    } else {
      icmp->code = kIcmpFragNeededCode;
      icmp->rest.set(mtu & 0xffff);
    }
  } else {
    icmp->type = v6 ? kIcmp6TimeExceeded : kIcmpTimeExceeded;
  }
  const Bytes icmp_bytes(reinterpret_cast<const std::byte*>(icmp), icmp_length);

  if (v6) {
    const auto* oh = reinterpret_cast<const Ipv6Header*>(orig);
    auto* ip = reinterpret_cast<Ipv6Header*>(o);
    *ip = Ipv6Header{};
    ip->ver_tc_flow.set(6u << 28);
    ip->payload_length.set(static_cast<uint16_t>(icmp_length));
    ip->next_header = kIpProtoIpv6Icmp;
    ip->hop_limit = kIcmpErrorTtl;
    std::memcpy(ip->src, source, 16);
    std::memcpy(ip->dst, oh->src, 16);
    icmp->checksum.set(internetChecksum(
        icmp_bytes,
        pseudoHeaderV6(ip->src, ip->dst, kIpProtoIpv6Icmp, static_cast<uint32_t>(icmp_length))));
  } else {
    const auto* oh = reinterpret_cast<const Ipv4Header*>(orig);
    auto* ip = reinterpret_cast<Ipv4Header*>(o);
    *ip = Ipv4Header{};
    ip->version_ihl = 0x45;
    ip->total_length.set(static_cast<uint16_t>(ip_header + icmp_length));
    ip->ttl = kIcmpErrorTtl;
    ip->protocol = kIpProtoIcmp;
    std::memcpy(ip->src, source, 4);
    std::memcpy(ip->dst, oh->src, 4);
    ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), ip_header)));
    icmp->checksum.set(internetChecksum(icmp_bytes));
  }
  return ip_header + icmp_length;
}

}  // namespace mcgw::proto
