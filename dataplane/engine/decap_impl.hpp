// Implementation of decapsulate() (dataplane/engine/decap.hpp); inline so the
// burst loop can inline the lookups.
#pragma once

#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ecn.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/geneve.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"

namespace mcgw::engine {

namespace detail {

// Applies RFC 6040 to the inner IP header of `inner` (an Ethernet frame).
// Returns false when the packet must be dropped.
inline bool applyEcnOnDecap(proto::MutableBytes inner, uint8_t outer_ecn) {
  using namespace proto;
  EthernetFrame f = parseEthernet(inner);
  if (!f.eth.ok()) {
    return true;  // not IP inside: nothing to combine
  }
  auto* ip_bytes = reinterpret_cast<uint8_t*>(inner.data()) + f.eth.header_length;
  if (f.ether_type == kEtherTypeIpv4 && f.eth.payload.size() >= sizeof(Ipv4Header) &&
      reinterpret_cast<const Ipv4Header*>(ip_bytes)->version() == 4) {
    auto* ip = reinterpret_cast<Ipv4Header*>(ip_bytes);
    auto ecn = ecnOnDecap(ip->ecn(), outer_ecn);
    if (!ecn) {
      return false;
    }
    if (*ecn != ip->ecn()) {
      uint16_t old_word = static_cast<uint16_t>(ip->version_ihl << 8 | ip->tos);
      ip->tos = static_cast<uint8_t>((ip->tos & 0xfc) | *ecn);
      uint16_t new_word = static_cast<uint16_t>(ip->version_ihl << 8 | ip->tos);
      ip->checksum.set(checksumUpdate16(ip->checksum.get(), old_word, new_word));
    }
  } else if (f.ether_type == kEtherTypeIpv6 && f.eth.payload.size() >= sizeof(Ipv6Header) &&
             reinterpret_cast<const Ipv6Header*>(ip_bytes)->version() == 6) {
    auto* ip = reinterpret_cast<Ipv6Header*>(ip_bytes);
    auto ecn = ecnOnDecap(ip->ecn(), outer_ecn);
    if (!ecn) {
      return false;
    }
    uint32_t w = ip->ver_tc_flow.get();
    ip->ver_tc_flow.set((w & ~(0x3u << 20)) | static_cast<uint32_t>(*ecn) << 20);
  }
  return true;
}

}  // namespace detail

template <typename Lookup>
DecapResult::Kind decapsulateInto(proto::MutableBytes frame, const Lookup& lookup,
                                  bool verify_ipv4_checksum, DecapResult& r, bool fixed_offsets) {
  using namespace proto;
  // The common tunnel packet, read at fixed offsets: untagged IPv4 without
  // options, not a fragment, UDP to the VXLAN port, the I flag, an outer
  // ECN that leaves the inner one alone, a known VTEP and VNI.  Anything
  // else, drops included, takes the general path below, which gives every
  // packet the same verdict (tests/unit/dataplane/decap_test.cpp compares
  // the two on every value of every header byte).
  if (fixed_offsets) {
    const auto* p = reinterpret_cast<const uint8_t*>(frame.data());
    const size_t n = frame.size();
    constexpr size_t kIp = 14, kUdp = 34, kVxlan = 42, kInner = 50;
    // (GCC turns these byte patterns into one load and a byte swap.)
    auto be16 = [p](size_t at) { return static_cast<uint16_t>(p[at] << 8 | p[at + 1]); };
    // EtherType, version and IHL, protocol, flags and fragment offset, and
    // the UDP destination port: one compare each.
    if (n >= kInner && be16(12) == kEtherTypeIpv4 && p[kIp] == 0x45 && p[kIp + 9] == kIpProtoUdp &&
        (be16(kIp + 6) & 0x3fff) == 0 && be16(kUdp + 2) == kVxlanPort) {
      const size_t total = be16(kIp + 2);
      const size_t udp_len = be16(kUdp + 4);
      const uint8_t ecn = p[kIp + 1] & 0x03;
      const uint32_t vni = (uint32_t{p[kVxlan + 4]} << 24 | uint32_t{p[kVxlan + 5]} << 16 |
                            uint32_t{p[kVxlan + 6]} << 8 | p[kVxlan + 7]) >>
                           8;
      uint32_t peer = 0, tunnel = 0;
      // (No subtraction: a total length below 20 must not wrap around.)
      if (total <= n - kIp && udp_len >= 8 + 8 + sizeof(EthernetHeader) && udp_len + 20 <= total &&
          (p[kVxlan] & kVxlanFlagVni) && ecn != kEcnEct1 && ecn != kEcnCe &&
          (!verify_ipv4_checksum || ipv4HeaderChecksumOk(p + kIp, 20)) &&
          lookup.peer(false, p + kIp + 12, &peer) && lookup.tenant(peer, vni, &tunnel)) {
        r.kind = DecapResult::Kind::kInner;
        r.vni = vni;
        r.peer = peer;
        r.tenant = tunnel;
        r.inner_offset = kInner;
        r.inner = frame.subspan(kInner, udp_len - 16);
        return r.kind;
      }
    }
  }
  r.kind = DecapResult::Kind::kNotTunnel;
  auto drop = [&r](DropReason why) {
    r.kind = DecapResult::Kind::kDrop;
    r.reason = why;
    return r.kind;
  };
  EthernetFrame eth = parseEthernet(frame);
  if (!eth.eth.ok()) {
    return drop(DropReason::kMALFORMED);
  }
  bool ipv6 = false;
  bool fragment = false;  // a fragment (atomic fragments are whole packets)
  const uint8_t* src = nullptr;
  const Ipv4Header* ip4 = nullptr;
  uint8_t outer_ecn = 0;
  Bytes l4;
  if (eth.ether_type == kEtherTypeIpv4) {
    auto ip = parseIpv4(eth.eth.payload);
    // Not UDP, or a later fragment (no UDP header to tell): not ours to
    // judge; other stages (or the kernel) take it.
    if (!ip.ok() || ip.header->protocol != kIpProtoUdp || ip.header->fragmentOffset() != 0) {
      return r.kind;
    }
    fragment = ip.header->moreFragments();
    ip4 = ip.header;
    src = ip.header->src;
    outer_ecn = ip.header->ecn();
    l4 = ip.payload;
  } else if (eth.ether_type == kEtherTypeIpv6) {
    Ipv6Packet ip = parseIpv6(eth.eth.payload);
    if (!ip.ip.ok() || ip.upper_protocol != kIpProtoUdp || !ip.first_fragment) {
      return r.kind;
    }
    fragment = ip.fragment;
    ipv6 = true;
    src = ip.ip.header->src;
    outer_ecn = ip.ip.header->ecn();
    l4 = ip.upper;
  } else {
    return r.kind;
  }
  const auto* udp_header = headerAt<UdpHeader>(l4);
  if (!udp_header) {
    return r.kind;
  }
  const uint16_t port = udp_header->dst_port.get();
  if (port != kVxlanPort && port != kGenevePort) {
    return r.kind;
  }
  // A tunnel packet's outer IPv4 header is trusted only with a valid
  // checksum (the kernel checks it for the packets left to it).
  if (ip4 && verify_ipv4_checksum &&
      !ipv4HeaderChecksumOk(reinterpret_cast<const uint8_t*>(ip4), ip4->headerLength())) {
    return drop(DropReason::kBAD_CHECKSUM);
  }
  // VTEPs never fragment (RFC 7348 4.3); a receiver may discard fragments.
  if (fragment) {
    return drop(DropReason::kOUTER_FRAGMENT);
  }
  auto udp = parseUdp(l4);
  if (!udp.ok()) {
    return drop(DropReason::kMALFORMED);
  }
  if (!lookup.peer(ipv6, src, &r.peer)) {
    return drop(DropReason::kUNKNOWN_VTEP);
  }
  Bytes inner;
  if (port == kVxlanPort) {
    auto v = parseVxlan(udp.payload);
    if (!v.ok()) {
      return drop(DropReason::kMALFORMED);
    }
    r.vni = v.header->vni();
    inner = v.payload;
  } else {
    auto g = parseGeneve(udp.payload);
    if (!g.ok() || g.header->protocol.get() != kGeneveProtoEthernet) {
      return drop(DropReason::kMALFORMED);
    }
    if (g.header->flags & kGeneveFlagOam) {
      return drop(DropReason::kOAM);  // RFC 8926 §3.4: never forwarded
    }
    // The C flag says whether any option is critical (RFC 8926 §3.4): only
    // then must the options be walked.
    if (g.header->critical() && hasUnknownCriticalOption(g, [&](uint16_t c, uint8_t t) {
          return lookup.knownGeneveOption(c, t);
        })) {
      return drop(DropReason::kCRITICAL_OPTION);
    }
    r.vni = g.header->vni();
    inner = g.payload;
  }
  if (!lookup.tenant(r.peer, r.vni, &r.tenant)) {
    return drop(DropReason::kUNKNOWN_VNI);
  }
  if (inner.size() < sizeof(EthernetHeader)) {
    return drop(DropReason::kMALFORMED);
  }
  r.inner_offset = static_cast<size_t>(inner.data() - frame.data());
  r.inner = frame.subspan(r.inner_offset, inner.size());
  // Outer Not-ECT or ECT(0) never changes the inner field (RFC 6040 4.2):
  // only ECT(1) and CE need the inner header.
  if ((outer_ecn == kEcnEct1 || outer_ecn == kEcnCe) &&
      !detail::applyEcnOnDecap(r.inner, outer_ecn)) {
    return drop(DropReason::kECN);
  }
  r.kind = DecapResult::Kind::kInner;
  return r.kind;
}

template <typename Lookup>
DecapResult decapsulate(proto::MutableBytes frame, const Lookup& lookup,
                        bool verify_ipv4_checksum) {
  DecapResult r;
  decapsulateInto(frame, lookup, verify_ipv4_checksum, r);
  return r;
}

}  // namespace mcgw::engine
