#include "control/pmtu/probe_codec.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/udp.hpp"

namespace mcgw::pmtu {

namespace {

constexpr char kMagic[] = "MCGWPROBE";  // 9 bytes without the NUL
constexpr size_t kMagicLength = 9;

void put16(std::byte* p, uint16_t v) {
  p[0] = std::byte(v >> 8);
  p[1] = std::byte(v & 0xff);
}
void put64(std::byte* p, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) {
    p[i] = std::byte(v >> (56 - 8 * i));
  }
}
uint64_t get64(const std::byte* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) {
    v = v << 8 | std::to_integer<uint64_t>(p[i]);
  }
  return v;
}
uint16_t get16(const std::byte* p) {
  return static_cast<uint16_t>(std::to_integer<unsigned>(p[0]) << 8 |
                               std::to_integer<unsigned>(p[1]));
}

config::IpAddress address(const uint8_t* b, bool v6) {
  config::IpAddress a;
  a.family = v6 ? config::Family::V6 : config::Family::V4;
  std::copy_n(b, v6 ? 16 : 4, a.bytes.begin());
  return a;
}

// The nonce of a probe request whose head the quote holds.
void quotedProbe(proto::Bytes udp_payload, IcmpError& out) {
  if (auto m = decodeProbe(udp_payload.first(std::min(udp_payload.size(), kProbeHeadLength)));
      m && !m->reply) {
    out.quoted_nonce = m->nonce;
  }
}

// The quoted packet: an outer IPv4 / IPv6 header and at least the first 8
// bytes of its UDP header (RFC 792 / RFC 4443 quote at least that much).
// Its length fields describe the original, not the quote.
void parseQuoted(proto::Bytes q, bool v6, IcmpVerdict verdict, IcmpError& out) {
  if (!v6) {
    const auto* ip = proto::headerAt<proto::Ipv4Header>(q);
    if (!ip || ip->version() != 4 || ip->headerLength() < sizeof(proto::Ipv4Header) ||
        q.size() < ip->headerLength() + sizeof(proto::UdpHeader)) {
      out.verdict = IcmpVerdict::kMalformed;
      return;
    }
    if (ip->protocol != proto::kIpProtoUdp || ip->fragmentOffset() != 0) {
      out.verdict = IcmpVerdict::kNotUdp;
      return;
    }
    const auto* udp = proto::headerAt<proto::UdpHeader>(q.subspan(ip->headerLength()));
    out.quoted_src = address(ip->src, false);
    out.quoted_dst = address(ip->dst, false);
    out.quoted_dport = udp->dst_port.get();
    out.quoted_sport = udp->src_port.get();
    out.quoted_length = ip->total_length.get();
    quotedProbe(q.subspan(ip->headerLength() + sizeof(proto::UdpHeader)), out);
  } else {
    const auto* ip = proto::headerAt<proto::Ipv6Header>(q);
    if (!ip || ip->version() != 6 ||
        q.size() < sizeof(proto::Ipv6Header) + sizeof(proto::UdpHeader)) {
      out.verdict = IcmpVerdict::kMalformed;
      return;
    }
    if (ip->next_header != proto::kIpProtoUdp) {  // our outer packets carry no extension headers
      out.verdict = IcmpVerdict::kNotUdp;
      return;
    }
    const auto* udp = proto::headerAt<proto::UdpHeader>(q.subspan(sizeof(proto::Ipv6Header)));
    out.quoted_src = address(ip->src, true);
    out.quoted_dst = address(ip->dst, true);
    out.quoted_dport = udp->dst_port.get();
    out.quoted_sport = udp->src_port.get();
    out.quoted_length = sizeof(proto::Ipv6Header) + ip->payload_length.get();
    quotedProbe(q.subspan(sizeof(proto::Ipv6Header) + sizeof(proto::UdpHeader)), out);
  }
  out.verdict = verdict;
}

}  // namespace

std::vector<std::byte> encodeProbe(const ProbeMessage& m, size_t payload_length) {
  std::vector<std::byte> out(m.reply ? kProbeHeadLength
                                     : std::max(payload_length, kProbeHeadLength));
  std::memcpy(out.data(), kMagic, kMagicLength);
  out[9] = std::byte{kProbeVersion};
  out[10] = std::byte{static_cast<uint8_t>(m.reply ? 2 : 1)};
  for (int i = 0; i < 8; ++i) {
    out[12 + static_cast<size_t>(i)] = std::byte(m.nonce >> (56 - 8 * i));
  }
  put16(&out[20], m.size);
  put16(&out[22], m.received);
  return out;
}

std::optional<ProbeMessage> decodeProbe(proto::Bytes b) {
  if (b.size() < kProbeHeadLength || std::memcmp(b.data(), kMagic, kMagicLength) != 0 ||
      b[9] != std::byte{kProbeVersion}) {
    return std::nullopt;
  }
  const auto type = std::to_integer<uint8_t>(b[10]);
  if (type != 1 && type != 2) {
    return std::nullopt;
  }
  ProbeMessage m;
  m.reply = type == 2;
  for (size_t i = 0; i < 8; ++i) {
    m.nonce = m.nonce << 8 | std::to_integer<uint64_t>(b[12 + i]);
  }
  m.size = get16(&b[20]);
  m.received = get16(&b[22]);
  return m;
}

uint8_t probeType(proto::Bytes b) {
  if (b.size() < 12 || std::memcmp(b.data(), kMagic, kMagicLength) != 0 ||
      b[9] != std::byte{kProbeVersion}) {
    return 0;
  }
  return std::to_integer<uint8_t>(b[10]);
}

std::vector<std::byte> encodeQuality(const QualityMessage& m) {
  std::vector<std::byte> out(kQualityLength);
  std::memcpy(out.data(), kMagic, kMagicLength);
  out[9] = std::byte{kProbeVersion};
  out[10] = std::byte{m.reply ? kQualityReply : kQualityRequest};
  put64(&out[12], m.sequence);
  put64(&out[20], m.sent_ns);
  return out;
}

std::optional<QualityMessage> decodeQuality(proto::Bytes b) {
  const uint8_t type = probeType(b);
  if (b.size() < kQualityLength || (type != kQualityRequest && type != kQualityReply)) {
    return std::nullopt;
  }
  return QualityMessage{type == kQualityReply, get64(&b[12]), get64(&b[20])};
}

IcmpError parseIcmp4(proto::Bytes pkt) {
  IcmpError out;
  const auto* ip = proto::headerAt<proto::Ipv4Header>(pkt);
  if (!ip || ip->version() != 4 || ip->headerLength() < sizeof(proto::Ipv4Header) ||
      pkt.size() < ip->headerLength()) {
    return out;
  }
  out.from = address(ip->src, false);
  auto icmp = proto::parseIcmp(pkt.subspan(ip->headerLength()));
  if (!icmp.ok()) {
    return out;
  }
  if (icmp.header->type == proto::kIcmpDestUnreachable &&
      icmp.header->code == proto::kIcmpFragNeededCode) {
    out.mtu = icmp.header->mtu4();
    parseQuoted(icmp.payload, false, IcmpVerdict::kTooBig, out);
  } else if (icmp.header->type == proto::kIcmpDestUnreachable &&
             icmp.header->code == proto::kIcmpPortUnreachableCode) {
    parseQuoted(icmp.payload, false, IcmpVerdict::kPortUnreachable, out);
    if (out.verdict != IcmpVerdict::kPortUnreachable) {
      out.verdict = IcmpVerdict::kOtherType;  // not about a UDP packet: not a probe
    }
  } else {
    out.verdict = IcmpVerdict::kOtherType;
  }
  return out;
}

IcmpError parseIcmp6(proto::Bytes msg, const config::IpAddress& from) {
  IcmpError out;
  out.from = from;
  auto icmp = proto::parseIcmp(msg);
  if (!icmp.ok()) {
    return out;
  }
  if (icmp.header->type == proto::kIcmp6PacketTooBig) {
    out.mtu = icmp.header->mtu6();
    parseQuoted(icmp.payload, true, IcmpVerdict::kTooBig, out);
  } else if (icmp.header->type == proto::kIcmp6DestUnreachable &&
             icmp.header->code == proto::kIcmp6PortUnreachableCode) {
    parseQuoted(icmp.payload, true, IcmpVerdict::kPortUnreachable, out);
    if (out.verdict != IcmpVerdict::kPortUnreachable) {
      out.verdict = IcmpVerdict::kOtherType;
    }
  } else {
    out.verdict = IcmpVerdict::kOtherType;
  }
  return out;
}

const LineAddresses* matchLine(const IcmpError& icmp, const std::vector<LineAddresses>& lines,
                               uint16_t probe_port) {
  if (icmp.verdict != IcmpVerdict::kTooBig) {
    return nullptr;
  }
  // The quoted packet must be one that did not fit the reported MTU (a
  // forged report quoting a small packet is ignored), and a tunnel packet
  // must carry one of the fast path's UDP source ports (49152-65535).
  if (icmp.mtu != 0 && icmp.quoted_length <= icmp.mtu) {
    return nullptr;
  }
  for (const auto& l : lines) {
    if (l.local == icmp.quoted_src && l.remote == icmp.quoted_dst &&
        ((icmp.quoted_dport == l.tunnel_port && icmp.quoted_sport >= 49152) ||
         icmp.quoted_dport == probe_port)) {
      return &l;
    }
  }
  return nullptr;
}

const LineAddresses* matchRefusedProbe(const IcmpError& icmp,
                                       const std::vector<LineAddresses>& lines,
                                       uint16_t probe_port) {
  if (icmp.verdict != IcmpVerdict::kPortUnreachable || icmp.quoted_dport != probe_port ||
      !icmp.quoted_nonce) {
    return nullptr;
  }
  // Only the peer's own kernel says that nobody listens there.
  for (const auto& l : lines) {
    if (l.local == icmp.quoted_src && l.remote == icmp.quoted_dst && icmp.from == l.remote) {
      return &l;
    }
  }
  return nullptr;
}

}  // namespace mcgw::pmtu
