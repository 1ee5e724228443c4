#include "dataplane/proto/vrrp.hpp"

#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"

namespace mcgw::proto {

namespace {

constexpr size_t kEthernetLength = sizeof(EthernetHeader);
constexpr size_t kArpLength = 28;
constexpr size_t kNdLength = 24;  // ICMPv6 head (8) + target (16)
constexpr uint8_t kNdOptionSourceLinkLayer = 1;
constexpr uint8_t kNdOptionTargetLinkLayer = 2;
constexpr uint8_t kNaRouter = 0x80;
constexpr uint8_t kNaSolicited = 0x40;
constexpr uint8_t kNaOverride = 0x20;

uint8_t* bytesOf(MutableBytes b) {
  return reinterpret_cast<uint8_t*>(b.data());
}
const uint8_t* bytesOf(Bytes b) {
  return reinterpret_cast<const uint8_t*>(b.data());
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

uint32_t pseudoHeader(const IpAddr& src, const IpAddr& dst, uint8_t protocol, size_t length) {
  return src.v6 ? pseudoHeaderV6(src.bytes.data(), dst.bytes.data(), protocol,
                                 static_cast<uint32_t>(length))
                : pseudoHeaderV4(src.bytes.data(), dst.bytes.data(), protocol,
                                 static_cast<uint16_t>(length));
}

bool isMulticast6(const IpAddr& a) {
  return a.bytes[0] == 0xff;
}
bool isUnspecified(const IpAddr& a) {
  return a.bytes == std::array<uint8_t, 16>{};
}

void writeEthernet(uint8_t* p, const Mac& dst, const Mac& src, uint16_t type) {
  std::memcpy(p, dst.data(), 6);
  std::memcpy(p + 6, src.data(), 6);
  put16(p + 12, type);
}

// An IPv4 header without options, its checksum filled in.
void writeIpv4(uint8_t* p, const IpAddr& src, const IpAddr& dst, uint8_t protocol, size_t payload) {
  auto* h = reinterpret_cast<Ipv4Header*>(p);
  h->version_ihl = 0x45;
  h->tos = kVrrpTos;
  h->total_length.set(static_cast<uint16_t>(sizeof(Ipv4Header) + payload));
  h->id.set(0);
  h->frag_off.set(0);
  h->ttl = kVrrpTtl;
  h->protocol = protocol;
  h->checksum.set(0);
  std::memcpy(h->src, src.bytes.data(), 4);
  std::memcpy(h->dst, dst.bytes.data(), 4);
  h->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(p), 20)));
}

void writeIpv6(uint8_t* p, const IpAddr& src, const IpAddr& dst, uint8_t next_header,
               uint8_t traffic_class, size_t payload) {
  auto* h = reinterpret_cast<Ipv6Header*>(p);
  h->ver_tc_flow.set(0x60000000u | static_cast<uint32_t>(traffic_class) << 20);
  h->payload_length.set(static_cast<uint16_t>(payload));
  h->next_header = next_header;
  h->hop_limit = kVrrpTtl;
  std::memcpy(h->src, src.bytes.data(), 16);
  std::memcpy(h->dst, dst.bytes.data(), 16);
}

size_t buildArp(MutableBytes out, uint16_t oper, const Mac& eth_dst, const Mac& sender_mac,
                const IpAddr& sender_ip, const Mac& target_mac, const IpAddr& target_ip) {
  if (out.size() < kArpFrameLength || sender_ip.v6 || target_ip.v6) {
    return 0;
  }
  uint8_t* p = bytesOf(out);
  writeEthernet(p, eth_dst, sender_mac, kEtherTypeArp);
  uint8_t* a = p + kEthernetLength;
  put16(a, 1);  // Ethernet
  put16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  put16(a + 6, oper);
  std::memcpy(a + 8, sender_mac.data(), 6);
  std::memcpy(a + 14, sender_ip.bytes.data(), 4);
  std::memcpy(a + 18, target_mac.data(), 6);
  std::memcpy(a + 24, target_ip.bytes.data(), 4);
  return kArpFrameLength;
}

// A Neighbor Advertisement with the target link-layer address option.
size_t buildNa(MutableBytes out, const Mac& eth_dst, const Mac& vmac, const IpAddr& src,
               const IpAddr& dst, const IpAddr& target, uint8_t flags) {
  if (out.size() < kNeighborAdvertFrameLength || !src.v6 || !dst.v6 || !target.v6) {
    return 0;
  }
  uint8_t* p = bytesOf(out);
  constexpr size_t icmp_length = kNdLength + 8;
  writeEthernet(p, eth_dst, vmac, kEtherTypeIpv6);
  // Traffic class 0: ND is ordinary host traffic.
  writeIpv6(p + kEthernetLength, src, dst, kIpProtoIpv6Icmp, 0, icmp_length);
  uint8_t* icmp = p + kEthernetLength + sizeof(Ipv6Header);
  std::memset(icmp, 0, icmp_length);
  icmp[0] = kIcmp6NeighborAdvert;
  icmp[4] = flags;
  std::memcpy(icmp + 8, target.bytes.data(), 16);
  icmp[24] = kNdOptionTargetLinkLayer;
  icmp[25] = 1;  // 8 bytes
  std::memcpy(icmp + 26, vmac.data(), 6);
  uint16_t c = internetChecksum(Bytes(reinterpret_cast<const std::byte*>(icmp), icmp_length),
                                pseudoHeader(src, dst, kIpProtoIpv6Icmp, icmp_length));
  put16(icmp + 2, c);
  return kNeighborAdvertFrameLength;
}

// RFC 4861 §7.1.1's checks of a Neighbor Solicitation (`icmp`: the whole
// ICMPv6 message, its checksum already verified; hop limit checked by the
// caller).
void readNeighborSolicit(Bytes icmp, ReceivedFrame& f) {
  const uint8_t* m = bytesOf(icmp);
  if (icmp.size() < kNdLength) {
    f.kind = FrameKind::kMalformed;
    f.error = VrrpError::kTruncated;
    return;
  }
  IpAddr target = IpAddr::fromBytes(true, m + 8);
  if (m[1] != 0 || isMulticast6(target)) {
    f.kind = FrameKind::kMalformed;
    f.error = VrrpError::kBadNeighborSolicit;
    return;
  }
  const bool from_unspecified = isUnspecified(f.src_ip);
  // From :: (duplicate address detection) only to a solicited-node group.
  if (from_unspecified && !(f.dst_ip.bytes[0] == 0xff && f.dst_ip.bytes[1] == 0x02 &&
                            f.dst_ip.bytes[11] == 0x01 && f.dst_ip.bytes[12] == 0xff)) {
    f.kind = FrameKind::kMalformed;
    f.error = VrrpError::kBadNeighborSolicit;
    return;
  }
  for (size_t off = kNdLength; off < icmp.size();) {
    if (icmp.size() - off < 2 || m[off + 1] == 0 || icmp.size() - off < m[off + 1] * 8u) {
      f.kind = FrameKind::kMalformed;
      f.error = VrrpError::kBadNeighborSolicit;
      return;
    }
    if (m[off] == kNdOptionSourceLinkLayer) {
      if (from_unspecified) {
        f.kind = FrameKind::kMalformed;
        f.error = VrrpError::kBadNeighborSolicit;
        return;
      }
      std::memcpy(f.sender_mac.data(), m + off + 2, 6);
      f.has_sender_mac = true;
    }
    off += m[off + 1] * 8u;
  }
  f.target_ip = target;
  f.kind = FrameKind::kNeighborSolicit;
}

void readArp(Bytes b, ReceivedFrame& f) {
  if (b.size() < kArpLength) {
    f.kind = FrameKind::kMalformed;
    f.error = VrrpError::kTruncated;
    return;
  }
  const uint8_t* a = bytesOf(b);
  if (get16(a) != 1 || get16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4 ||
      get16(a + 6) != 1) {
    f.kind = FrameKind::kOther;
    f.error = VrrpError::kOtherArp;
    return;
  }
  std::memcpy(f.sender_mac.data(), a + 8, 6);
  f.has_sender_mac = true;
  f.sender_ip = IpAddr::fromBytes(false, a + 14);
  f.target_ip = IpAddr::fromBytes(false, a + 24);
  f.kind = FrameKind::kArpRequest;
}

}  // namespace

IpAddr IpAddr::fromBytes(bool v6, const uint8_t* p) {
  IpAddr r;
  r.v6 = v6;
  std::memcpy(r.bytes.data(), p, v6 ? 16 : 4);
  return r;
}

std::string toString(const IpAddr& a) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  if (!a.v6) {
    for (int i = 0; i < 4; ++i) {
      if (i) {
        s += '.';
      }
      s += std::to_string(a.bytes[i]);
    }
    return s;
  }
  uint16_t g[8];
  for (int i = 0; i < 8; ++i) {
    g[i] = get16(a.bytes.data() + 2 * i);
  }
  // The longest run of two or more zero groups (the first of equals) is "::".
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && g[j] == 0) {
      ++j;
    }
    if (j - i > best_len && j - i >= 2) {
      best = i;
      best_len = j - i;
    }
    i = j == i ? i + 1 : j;
  }
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      s += "::";
      i += best_len - 1;
      continue;
    }
    if (i && !(best >= 0 && i == best + best_len)) {
      s += ':';
    }
    bool lead = true;
    for (int shift = 12; shift >= 0; shift -= 4) {
      int d = (g[i] >> shift) & 0xf;
      if (d || !lead || shift == 0) {
        s += kHex[d];
        lead = false;
      }
    }
  }
  return s;
}

int compareAddresses(const IpAddr& a, const IpAddr& b) {
  // Network byte order: bytewise is numeric order, for IPv4 too.
  return std::memcmp(a.bytes.data(), b.bytes.data(), a.size());
}

IpAddr ParsedAdvert::address(size_t i) const {
  return IpAddr::fromBytes(v6, bytesOf(addresses) + i * (v6 ? 16 : 4));
}

size_t encodeVrrpAdvert(MutableBytes out, const VrrpAdvertisement& a, const IpAddr& src,
                        const IpAddr& dst) {
  const bool v6 = src.v6;
  if (dst.v6 != v6 || a.interval_cs == 0 || a.interval_cs > kVrrpMaxIntervalCs ||
      a.addresses.size() > 255) {
    return 0;
  }
  for (const IpAddr& x : a.addresses) {
    if (x.v6 != v6) {
      return 0;
    }
  }
  const size_t length = vrrpLength(v6, a.addresses.size());
  if (out.size() < length) {
    return 0;
  }
  uint8_t* p = bytesOf(out);
  auto* h = reinterpret_cast<VrrpHeader*>(p);
  h->version_type = kVrrpVersion << 4 | kVrrpTypeAdvertisement;
  h->vrid = a.vrid;
  h->priority = a.priority;
  h->count = static_cast<uint8_t>(a.addresses.size());
  h->rsvd_interval.set(a.interval_cs);
  h->checksum.set(0);
  uint8_t* q = p + sizeof(VrrpHeader);
  for (const IpAddr& x : a.addresses) {
    std::memcpy(q, x.bytes.data(), x.size());
    q += x.size();
  }
  h->checksum.set(
      internetChecksum(Bytes(out.data(), length), pseudoHeader(src, dst, kIpProtoVrrp, length)));
  return length;
}

AdvertResult parseVrrpAdvert(Bytes b, const IpAddr& src, const IpAddr& dst) {
  AdvertResult r;
  const auto* h = headerAt<VrrpHeader>(b);
  if (!h) {
    r.error = VrrpError::kTruncated;
    return r;
  }
  if (h->version() != kVrrpVersion) {
    r.error = VrrpError::kBadVersion;
    return r;
  }
  if (h->type() != kVrrpTypeAdvertisement) {
    r.error = VrrpError::kBadType;
    return r;
  }
  const bool v6 = src.v6;
  if (b.size() != vrrpLength(v6, h->count)) {
    r.error = VrrpError::kBadAddressCount;
    return r;
  }
  if (h->interval() == 0) {
    r.error = VrrpError::kZeroInterval;
    return r;
  }
  // The sum over the message with its checksum in place is 0xffff when right.
  if (checksumFold(checksumAdd(b, pseudoHeader(src, dst, kIpProtoVrrp, b.size()))) != 0xffff) {
    r.error = VrrpError::kBadChecksum;
    return r;
  }
  r.advert.vrid = h->vrid;
  r.advert.priority = h->priority;
  r.advert.interval_cs = h->interval();
  r.advert.count = h->count;
  r.advert.v6 = v6;
  r.advert.addresses = b.subspan(sizeof(VrrpHeader));
  return r;
}

VrrpPacket parseVrrpPacket(Bytes ip_packet, bool v6) {
  VrrpPacket r;
  Bytes payload;
  if (!v6) {
    auto ip = parseIpv4(ip_packet);
    if (!ip.ok()) {
      r.error =
          ip.error == ParseError::kTruncated ? VrrpError::kTruncated : VrrpError::kBadIpv4Header;
      return r;
    }
    r.src = IpAddr::fromBytes(false, ip.header->src);
    r.dst = IpAddr::fromBytes(false, ip.header->dst);
    r.ttl = ip.header->ttl;
    if (ip.header->protocol != kIpProtoVrrp) {
      r.error = VrrpError::kOtherProtocol;
      return r;
    }
    if (internetChecksum(ip_packet.first(ip.header_length)) != 0) {
      r.error = VrrpError::kBadIpv4Checksum;
      return r;
    }
    if (ip.header->isFragment()) {
      r.error = VrrpError::kFragment;
      return r;
    }
    payload = ip.payload;
  } else {
    auto ip = parseIpv6(ip_packet);
    if (!ip.ip.ok()) {
      r.error = ip.ip.error == ParseError::kTruncated && !ip.ip.header ? VrrpError::kTruncated
                                                                       : VrrpError::kBadIpv6Header;
      return r;
    }
    r.src = IpAddr::fromBytes(true, ip.ip.header->src);
    r.dst = IpAddr::fromBytes(true, ip.ip.header->dst);
    r.ttl = ip.ip.header->hop_limit;
    if (ip.upper_protocol != kIpProtoVrrp) {
      r.error = VrrpError::kOtherProtocol;
      return r;
    }
    if (ip.fragment) {
      r.error = VrrpError::kFragment;
      return r;
    }
    payload = ip.upper;
  }
  auto a = parseVrrpAdvert(payload, r.src, r.dst);
  r.error = a.error;
  r.advert = a.advert;
  return r;
}

ReceivedFrame parseFrame(Bytes frame) {
  ReceivedFrame f;
  EthernetFrame eth = parseEthernet(frame);
  if (!eth.eth.ok()) {
    f.kind = FrameKind::kMalformed;
    f.error = VrrpError::kTruncated;
    return f;
  }
  std::memcpy(f.dst_mac.data(), eth.eth.header->dst, 6);
  std::memcpy(f.src_mac.data(), eth.eth.header->src, 6);
  f.vlan = eth.vlan;
  Bytes l3 = eth.eth.payload;
  switch (eth.ether_type) {
    case kEtherTypeArp:
      readArp(l3, f);
      return f;
    case kEtherTypeIpv4:
    case kEtherTypeIpv6:
      break;
    default:
      f.error = VrrpError::kOtherEtherType;
      return f;
  }
  const bool v6 = eth.ether_type == kEtherTypeIpv6;
  VrrpPacket p = parseVrrpPacket(l3, v6);
  f.src_ip = p.src;
  f.dst_ip = p.dst;
  f.ttl = p.ttl;
  if (p.ok()) {
    f.kind = FrameKind::kVrrpAdvert;
    f.advert = p.advert;
    return f;
  }
  if (p.error != VrrpError::kOtherProtocol || !v6) {
    f.kind = isMalformed(p.error) ? FrameKind::kMalformed : FrameKind::kOther;
    f.error = p.error;
    return f;
  }
  // IPv6, not VRRP: a Neighbor Solicitation?
  auto ip = parseIpv6(l3);
  if (ip.upper_protocol != kIpProtoIpv6Icmp || ip.fragment || ip.upper.empty() ||
      bytesOf(ip.upper)[0] != kIcmp6NeighborSolicit) {
    f.error =
        ip.upper_protocol == kIpProtoIpv6Icmp ? VrrpError::kOtherIcmpv6 : VrrpError::kOtherProtocol;
    return f;
  }
  f.kind = FrameKind::kMalformed;
  if (ip.upper.size() < kNdLength) {
    f.error = VrrpError::kTruncated;
    return f;
  }
  if (checksumFold(checksumAdd(ip.upper, pseudoHeader(f.src_ip, f.dst_ip, kIpProtoIpv6Icmp,
                                                      ip.upper.size()))) != 0xffff) {
    f.error = VrrpError::kBadIcmpv6Checksum;
    return f;
  }
  if (f.ttl != kVrrpTtl) {
    f.error = VrrpError::kBadHopLimit;
    return f;
  }
  readNeighborSolicit(ip.upper, f);
  return f;
}

size_t buildAdvertFrame(MutableBytes out, const VrrpAdvertisement& a, const IpAddr& src) {
  const bool v6 = src.v6;
  const size_t ip_length = v6 ? sizeof(Ipv6Header) : sizeof(Ipv4Header);
  const size_t vrrp_offset = kEthernetLength + ip_length;
  if (out.size() < vrrp_offset) {
    return 0;
  }
  const IpAddr& dst = v6 ? kVrrpGroupV6 : kVrrpGroupV4;
  size_t n = encodeVrrpAdvert(out.subspan(vrrp_offset), a, src, dst);
  if (n == 0) {
    return 0;
  }
  uint8_t* p = bytesOf(out);
  writeEthernet(p, v6 ? kVrrpGroupMacV6 : kVrrpGroupMacV4, virtualMac(a.vrid, v6),
                v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  if (v6) {
    writeIpv6(p + kEthernetLength, src, dst, kIpProtoVrrp, kVrrpTos, n);
  } else {
    writeIpv4(p + kEthernetLength, src, dst, kIpProtoVrrp, n);
  }
  return vrrp_offset + n;
}

size_t buildGratuitousArp(MutableBytes out, const Mac& vmac, const IpAddr& vip) {
  return buildArp(out, 1, kBroadcastMac, vmac, vip, Mac{}, vip);
}

size_t buildArpReply(MutableBytes out, const Mac& vmac, const IpAddr& vip, const Mac& requester_mac,
                     const IpAddr& requester_ip) {
  return buildArp(out, 2, requester_mac, vmac, vip, requester_mac, requester_ip);
}

size_t buildUnsolicitedNa(MutableBytes out, const Mac& vmac, const IpAddr& src,
                          const IpAddr& target, bool router) {
  return buildNa(out, kAllNodesMac, vmac, src, kAllNodesV6, target,
                 static_cast<uint8_t>(kNaOverride | (router ? kNaRouter : 0)));
}

size_t buildSolicitedNa(MutableBytes out, const Mac& vmac, const IpAddr& target, bool router,
                        const IpAddr& solicitor_ip, const Mac& solicitor_mac) {
  const uint8_t r = router ? kNaRouter : 0;
  if (isUnspecified(solicitor_ip)) {
    return buildNa(out, kAllNodesMac, vmac, target, kAllNodesV6, target,
                   static_cast<uint8_t>(kNaOverride | r));
  }
  return buildNa(out, solicitor_mac, vmac, target, solicitor_ip, target,
                 static_cast<uint8_t>(kNaSolicited | kNaOverride | r));
}

}  // namespace mcgw::proto
