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

// The quoted packet: an outer IPv4 / IPv6 header and at least the first 8
// bytes of its UDP header (RFC 792 / RFC 4443 quote at least that much).
// Its length fields describe the original, not the quote.
void parseQuoted(proto::Bytes q, bool v6, IcmpTooBig& out) {
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
  }
  out.verdict = IcmpVerdict::kTooBig;
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

IcmpTooBig parseIcmp4(proto::Bytes pkt) {
  IcmpTooBig out;
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
  if (icmp.header->type != proto::kIcmpDestUnreachable ||
      icmp.header->code != proto::kIcmpFragNeededCode) {
    out.verdict = IcmpVerdict::kOtherType;
    return out;
  }
  out.mtu = icmp.header->mtu4();
  parseQuoted(icmp.payload, false, out);
  return out;
}

IcmpTooBig parseIcmp6(proto::Bytes msg, const config::IpAddress& from) {
  IcmpTooBig out;
  out.from = from;
  auto icmp = proto::parseIcmp(msg);
  if (!icmp.ok()) {
    return out;
  }
  if (icmp.header->type != proto::kIcmp6PacketTooBig) {
    out.verdict = IcmpVerdict::kOtherType;
    return out;
  }
  out.mtu = icmp.header->mtu6();
  parseQuoted(icmp.payload, true, out);
  return out;
}

const LineAddresses* matchLine(const IcmpTooBig& icmp, const std::vector<LineAddresses>& lines,
                               uint16_t probe_port) {
  if (icmp.verdict != IcmpVerdict::kTooBig) {
    return nullptr;
  }
  for (const auto& l : lines) {
    if (l.local == icmp.quoted_src && l.remote == icmp.quoted_dst &&
        (icmp.quoted_dport == l.tunnel_port || icmp.quoted_dport == probe_port)) {
      return &l;
    }
  }
  return nullptr;
}

}  // namespace mcgw::pmtu
